"""kubectl habits of the trainyard CLI against the real server (simulated GPUs): labels and -l
selectors (filtered by the server), ls --watch, logs --tail/--since, wait, cancel -l/--all,
-o wide|json|yaml|name on the listing verbs, and bash/zsh completion scripts.
Usage: kubectl_habits_test.py PATH/TO/trainyard [unittest args]"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
import harness  # noqa: E402

FAST = "reconcileIntervalSeconds: 0.05\nretryBackoff: {initialSeconds: 0.2, maxSeconds: 1}\n"


class KubectlHabits(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = harness.Server(gpus="sim:4xH100-80GB", config=FAST).start()

    @classmethod
    def tearDownClass(cls):
        cls.s.stop()

    def sleeper(self, name, *labels, gpus="1"):
        args = ["--gpus", gpus, "--name", name]
        for label in labels:
            args += ["--label", label]
        return self.s.run(*args, "--", "sleep", "60")

    def names(self, *args):
        return self.s.cli(*args, "-o", "name").stdout.split()

    # ---- labels and selectors ----
    def test_labels_select_jobs_on_the_server(self):
        a = self.s.run("--name", "sel-a", "--label", "sweep=s1", "--label", "lr=3", "--", "true")
        b = self.s.run("--name", "sel-b", "--label", "sweep=s1", "--label", "lr=4", "--", "true")
        c = self.s.run("--name", "sel-c", "--label", "sweep=s2", "--", "true")
        self.assertEqual(self.names("ls", "-l", "sweep=s1"), [f"job/{b}", f"job/{a}"])
        self.assertEqual(self.names("ls", "-l", "sweep=s1,lr!=3"), [f"job/{b}"])
        self.assertEqual(self.names("ls", "-l", "sweep,!lr"), [f"job/{c}"])
        # The server filters: the limit counts matching jobs, and nextBefore pages through them.
        st, page = self.s.http("GET", "/api/v1/jobs?limit=1&labelSelector=sweep%3Ds1")
        self.assertEqual(st, 200)
        self.assertEqual([j["id"] for j in page["items"]], [b])
        st, page2 = self.s.http("GET", f"/api/v1/jobs?limit=1&labelSelector=sweep%3Ds1"
                                       f"&before={page['nextBefore']}")
        self.assertEqual([j["id"] for j in page2["items"]], [a])
        self.assertEqual(page["items"][0]["labels"], {"sweep": "s1", "lr": "4"})
        # Shown by ls -o wide and show.
        wide = self.s.cli("ls", "-o", "wide", "-l", "sweep=s2").stdout
        self.assertIn("LABELS", wide.splitlines()[0])
        self.assertIn("sweep=s2", wide)
        self.assertIn("lr=3,sweep=s1", self.s.cli("show", str(a)).stdout)

    def test_bad_selectors_and_labels_are_refused_precisely(self):
        r = self.s.cli("ls", "-l", "team=a,,b", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("term 2 is empty", r.stderr)
        r = self.s.cli("ls", "-l", "team=a b", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn('"a b" is not a label value', r.stderr)
        st, body = self.s.http("GET", "/api/v1/jobs?labelSelector=-x")
        self.assertEqual(st, 400)
        self.assertIn("not a label key", json.dumps(body))
        r = self.s.cli("run", "--label", "nokey", "--", "true", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("key=value", r.stderr)

    # ---- wait ----
    def test_wait_for_success_failure_and_timeout(self):
        ok = self.s.run("--name", "wait-ok", "--", "sh", "-c", "sleep 0.5")
        r = self.s.cli("wait", str(ok), "--for", "state=succeeded", "--timeout", "30s")
        self.assertIn(f"job {ok} (wait-ok) succeeded: condition met", r.stdout)
        bad = self.s.run("--name", "wait-bad", "--backoff-limit", "0", "--", "sh", "-c", "exit 3")
        r = self.s.cli("wait", "wait-bad", "--for", "state=succeeded", "--timeout", "30s",
                       check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn(f"job {bad} (wait-bad) ended failed", r.stderr)
        slow = self.sleeper("wait-slow")
        r = self.s.cli("wait", str(slow), "--for", "state=running", "--timeout", "30s")
        self.assertIn("running: condition met", r.stdout)
        t0 = time.time()
        r = self.s.cli("wait", str(slow), "--for", "state=succeeded", "--timeout", "2s",
                       check=False)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("timed out after 2s", r.stderr)
        self.assertLess(time.time() - t0, 10)
        # A job that ran and already ended did pass through running.
        r = self.s.cli("wait", str(ok), "--for", "state=running", "--timeout", "5s")
        self.assertIn("condition met", r.stdout)
        r = self.s.cli("wait", str(ok), "--for", "state=done", check=False)
        self.assertEqual(r.returncode, 2)
        self.s.cli("cancel", str(slow))

    # ---- cancel by selector and --all ----
    def test_cancel_by_selector_and_all(self):
        keep = self.sleeper("cx-keep", "group=keep")
        j1 = self.sleeper("cx-1", "group=drop")
        # Four GPUs, two of them held by the jobs above: this one stays pending.
        j2 = self.s.run("--gpus", "4", "--name", "cx-2", "--label", "group=drop", "--",
                        "sleep", "60")
        r = self.s.cli("cancel", "-l", "group=drop")
        self.assertIn(f"job {j1} (cx-1)", r.stdout)
        self.assertIn(f"job {j2} (cx-2) cancelled", r.stdout)
        self.assertEqual(self.s.wait(j2)["state"], "cancelled")
        self.assertEqual(self.s.wait(j1)["state"], "cancelled")
        self.assertNotEqual(self.s.job(keep)["state"], "cancelled")
        # --all refuses without --yes when stdin is not a terminal, and cancels nothing.
        r = self.s.cli("cancel", "--all", check=False, stdin="y\n")
        self.assertEqual(r.returncode, 2)
        self.assertIn("stdin is not a terminal", r.stderr)
        self.assertNotEqual(self.s.job(keep)["state"], "cancelled")
        r = self.s.cli("cancel", "--all", "--yes")
        self.assertIn(f"job {keep} (cx-keep)", r.stdout)
        self.assertEqual(self.s.wait(keep)["state"], "cancelled")
        r = self.s.cli("cancel", "--all", "-l", "group=x", check=False)
        self.assertEqual(r.returncode, 2)

    # ---- logs --tail / --since ----
    def test_logs_tail_and_since(self):
        jid = self.s.run("--name", "lines", "--", "sh", "-c",
                         "for i in 1 2 3 4 5; do echo line$i; done; sleep 2.2; echo late1; "
                         "echo late2")
        self.assertEqual(self.s.wait(jid)["state"], "succeeded")
        self.assertEqual(self.s.logs(jid, "--tail", "2"), "late1\nlate2\n")
        self.assertEqual(self.s.logs(jid, "--tail", "0"), "")
        self.assertEqual(self.s.logs(jid).count("\n"), 7)
        # Only the lines of the last second or so: the late ones, written 2 s after the rest.
        self.assertEqual(self.s.logs(jid, "--since", "1s"), "late1\nlate2\n")
        self.assertEqual(self.s.logs(jid, "--since", "10m").count("\n"), 7)
        self.assertEqual(self.s.logs(jid, "--since", "10m", "--tail", "3"), "line5\nlate1\nlate2\n")
        self.assertEqual(self.s.logs(jid, "--since", "2020-01-01T00:00:00Z").count("\n"), 7)
        self.assertEqual(self.s.logs(jid, "--since", "2099-01-01T00:00:00+01:00"), "")
        r = self.s.cli("logs", str(jid), "--since", "yesterday", check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("RFC 3339", r.stderr)

    # ---- ls --watch ----
    def test_ls_watch_prints_changes_until_interrupted(self):
        env = dict(os.environ, TRAINYARD_SERVER=self.s.url)
        env.pop("TRAINYARD_TOKEN", None)
        watch = subprocess.Popen([harness.BIN, "ls", "-w", "-l", "watch=yes"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        jid = self.s.run("--name", "watched", "--label", "watch=yes", "--", "sh", "-c", "sleep 1")
        self.s.wait(jid)
        time.sleep(2.5)
        watch.send_signal(signal.SIGINT)
        out, err = watch.communicate(timeout=10)
        self.assertEqual(watch.returncode, 0, err)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("ID"), out)
        mine = [line.split() for line in lines[1:] if line.split()[:2] == [str(jid), "watched"]]
        states = [cols[3] for cols in mine]
        self.assertIn("succeeded", states, out)
        self.assertEqual(states[-1], "succeeded", out)
        self.assertEqual(len(states), len(set(states)), out)  # a line per change, not per poll

    # ---- -o on listing verbs ----
    def test_listing_verbs_take_every_output_form(self):
        jid = self.s.run("--name", "outs", "--", "true")
        self.s.wait(jid)
        for verb, prefix in (("ls", "job/"), ("nodes", "node/"), ("queues", "queue/")):
            for form in ("wide", "json", "yaml", "name", ""):
                args = [verb] + (["-o", form] if form else [])
                r = self.s.cli(*args)
                self.assertTrue(r.stdout.strip(), f"{args}: empty")
                if form == "json":
                    json.loads(r.stdout)
                if form == "name":
                    self.assertTrue(all(w.startswith(prefix) for w in r.stdout.split()), r.stdout)
            r = self.s.cli(verb, "-o", "table", check=False)
            self.assertEqual(r.returncode, 2, verb)
            self.assertIn("wide, json, yaml or name", r.stderr)
        self.assertIn("LABELS", self.s.cli("nodes", "-o", "wide").stdout.splitlines()[0])
        self.assertIn(f"job/{jid}", self.names("ls"))
        for verb in (["alerts", "--all"], ["checkpoints", str(jid)]):
            for form in ("wide", "json", "yaml", "name"):
                self.s.cli(*verb, "-o", form)
        # What -o name prints, the verbs take back.
        self.assertEqual(self.s.job(f"job/{jid}")["id"], jid)

    # ---- completion ----
    def bash_complete(self, script, *words):
        """The candidates bash completion offers for `words` (the last one being completed)."""
        words = ["trainyard"] + list(words)
        prog = (f'source "$1"\nCOMP_WORDS=({" ".join(repr(w) for w in words)})\n'
                f'COMP_CWORD={len(words) - 1}\n'
                'PATH="$(dirname "$2"):$PATH"\n'
                'COMP_WORDS[0]="$2"\n_trainyard\nprintf "%s\\n" "${COMPREPLY[@]}"\n')
        env = dict(os.environ, TRAINYARD_SERVER=self.s.url)
        r = subprocess.run(["bash", "-c", prog, "bash", script, harness.BIN], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return sorted(w for w in r.stdout.split("\n") if w)

    def test_bash_completion_from_the_command_table(self):
        script = os.path.join(self.s.state_dir, "completion.bash")
        with open(script, "w") as f:
            f.write(self.s.cli("completion", "bash").stdout)
        self.assertIn("wait", self.bash_complete(script, "wa"))
        self.assertEqual(self.bash_complete(script, "can"), ["cancel"])
        self.assertIn("completion", self.bash_complete(script, ""))
        self.assertTrue({"--watch", "--selector", "--output"} <=
                        set(self.bash_complete(script, "ls", "--")))
        self.assertEqual(self.bash_complete(script, "logs", "--t"), ["--tail"])
        self.assertEqual(self.bash_complete(script, "ls", "-o", "ya"), ["yaml"])
        self.assertEqual(self.bash_complete(script, "token", "cr"), ["create"])
        self.assertEqual(self.bash_complete(script, "wait", "1", "--for", "state=s"),
                         ["state=succeeded"])
        self.assertEqual(self.bash_complete(script, "ls", "--state", "r"), ["running"])
        jid = self.s.run("--name", "complete-me", "--", "true")
        self.assertIn(str(jid), self.bash_complete(script, "logs", ""))
        self.assertIn(str(jid), self.bash_complete(script, "wait", str(jid)[:1]))
        self.assertEqual(self.bash_complete(script, "nodes", ""), [])  # takes no job

    def test_zsh_completion_script(self):
        r = self.s.cli("completion", "zsh")
        self.assertIn("compdef _trainyard trainyard", r.stdout)
        self.assertIn("'wait:Wait until jobs reach a state", r.stdout)
        r = self.s.cli("completion", "fish", check=False)
        self.assertEqual(r.returncode, 2)
        if not shutil.which("zsh"):
            self.skipTest("zsh is not installed (scripts/setup installs it)")
        script = os.path.join(self.s.state_dir, "completion.zsh")
        with open(script, "w") as f:
            f.write(self.s.cli("completion", "zsh").stdout)
        check = subprocess.run(["zsh", "-n", script], capture_output=True, text=True)
        self.assertEqual(check.returncode, 0, check.stderr)
        # The helpers the completer calls, run in zsh itself.
        env = dict(os.environ, TRAINYARD_SERVER=self.s.url)
        prog = ('compdef() { :; }\nsource "$1"\n_trainyard_options wait\n'
                '_trainyard_job_ids "$2" ""\n')
        r = subprocess.run(["zsh", "-f", "-c", prog, "zsh", script, harness.BIN], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--for", r.stdout)
        self.assertIn("--timeout", r.stdout)
        # The completer itself, with compadd and _describe standing in for zsh's completion
        # system: they print the candidates they are given.
        jid = self.s.run("--name", "zsh-job", "--", "true")

        def zsh_complete(*words):
            words = ["trainyard"] + list(words)
            prog = ('compdef() { :; }\n'
                    'compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -rl -- "$@"; }\n'
                    '_describe() { print -rl -- "${(@P)4}"; }\n'
                    'source "$1"\n'
                    f'words=({" ".join(repr(w) for w in words)})\n'
                    f'CURRENT={len(words)}\n'
                    'words[1]="$2"\n_trainyard\n')
            out = subprocess.run(["zsh", "-f", "-c", prog, "zsh", script, harness.BIN], env=env,
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout.split("\n")

        self.assertIn("wait:Wait until jobs reach a state\\: wait JOB... --for state=succeeded "
                      "--timeout 10m", zsh_complete(""))
        self.assertIn("--watch", zsh_complete("ls", "--"))
        self.assertEqual([w for w in zsh_complete("ls", "-o", "") if w],
                         ["wide", "json", "yaml", "name"])
        self.assertIn(str(jid), zsh_complete("logs", ""))
        self.assertIn("state=failed", zsh_complete("wait", "1", "--for", ""))


if __name__ == "__main__":
    harness.BIN = sys.argv.pop(1)
    unittest.main()
