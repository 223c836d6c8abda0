"""SIGKILL of random ranks at random moments of a sharded save loop: the ranks always agree.

Each round is one attempt of a 3-rank job: three processes resume from latest() and save
step after step (keep_last=1, the case where a step common to all ranks is easiest to
lose; one rank saves in the background). Random ranks are SIGKILLed at random moments,
then the rest (a gang fails as a whole). The next round's ranks must all resume from the
same step, no older than the newest step every rank reported saved, with every shard of
it holding what one attempt wrote. TY_SDK_LONG=1 runs 40 rounds instead of 10.
"""

import os
import random
import signal
import time
import unittest

import sdk_test_util
from multirank_child import shard_payload
from test_multirank_protocol import fast_temp_dir
from trainyard import CheckpointManager

ROUNDS = 40 if os.environ.get("TY_SDK_LONG") == "1" else 10
WORLD = 3


class MultiRankCrashTest(unittest.TestCase):
    def test_random_kills_of_random_ranks(self):
        tmp = fast_temp_dir()
        self.addCleanup(tmp.cleanup)
        directory = os.path.join(tmp.name, "ckpt")
        seed = int(os.environ.get("TY_SDK_SEED", "0")) or random.randrange(1 << 30)
        rng = random.Random(seed)
        confirmed = 0  # the newest step every rank reported saved
        for attempt in range(1, ROUNDS + 2):
            where = "seed %d attempt %d" % (seed, attempt)
            children = [sdk_test_util.start_child(
                "multirank_child.py",
                ["loop", directory, WORLD, r, attempt, 1] + (["background"] if r == 2 else []),
                sdk_test_util.child_env()) for r in range(WORLD)]
            try:
                starts = {c.stdout.readline().strip() for c in children}
                if "" in starts:  # a child died: say why
                    for c in children:
                        c.kill()
                    self.fail(where + ": a rank did not start:\n" + "\n".join(
                        c.communicate()[1] for c in children))
                self.assertEqual(len(starts), 1, where + ": ranks resumed from %s" % starts)
                start = starts.pop()
                self.assertTrue(start.startswith("start "), where + ": " + start)
                step = int(start.split()[1])
                self.assertGreaterEqual(step, confirmed, where + ": a step all ranks saved "
                                        "is gone")
                if attempt > ROUNDS:
                    break
                time.sleep(rng.uniform(0.0, 0.4))
                order = list(range(WORLD))
                rng.shuffle(order)
                for r in order:  # the first victims, then the rest of the gang
                    children[r].send_signal(signal.SIGKILL)
                    time.sleep(rng.choice([0.0, 0.0, rng.uniform(0.0, 0.05)]))
                saved = []
                for c in children:
                    out, err = c.communicate(timeout=30)
                    self.assertEqual(c.returncode, -signal.SIGKILL, where + ": " + err)
                    lines = out.split("\n")[:-1]  # a kill may cut the last line short
                    saved.append(max([step] + [int(s[6:]) for s in lines
                                               if s.startswith("saved ")]))
                # A save in flight may have completed a step after its "saved" line.
                confirmed = max(confirmed, min(saved))
            finally:
                for c in children:
                    if c.poll() is None:
                        c.kill()
                        c.communicate()
        self.check_final(directory, confirmed, ROUNDS + 1)

    def check_final(self, directory, confirmed, attempt):
        ranks = [CheckpointManager(directory, keep_last=1, sharded=True, rank=r,
                                   world_size=WORLD, attempt=attempt) for r in range(WORLD)]
        cks = [mgr.latest() for mgr in ranks]
        self.assertEqual(len({ck.step for ck in cks}), 1)
        self.assertGreaterEqual(cks[0].step, confirmed)
        attempts = set()
        for r, ck in enumerate(cks):
            self.assertIsNone(ck.verify())
            got = ck.read_all()
            a = int(got["who"].split()[-1])
            attempts.add(a)
            self.assertEqual(got, shard_payload(r, ck.step, a))
        self.assertEqual(len(attempts), 1, "shards of step %d from attempts %s"
                         % (cks[0].step, attempts))


if __name__ == "__main__":
    unittest.main()
