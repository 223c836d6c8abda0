"""trainyard.distributed: reading the worker's environment (torchrun and Slurm forms, and the
errors that name the variable at fault), and a one-process world with each compression."""

import unittest

import sdk_test_util as util
from trainyard import distributed
from trainyard.distributed import DistributedConfigError, parse_env

TORCHRUN = {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.5",
            "MASTER_PORT": "29400"}
SLURM = {"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_NNODES": "4",
         "SLURM_JOB_NODELIST": "gpu[07-10]", "SLURM_JOB_ID": "123456"}


def env(base, **changes):
    out = dict(base)
    for k, v in changes.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


class ParseEnv(unittest.TestCase):
    def assertError(self, environ, *words):
        with self.assertRaises(DistributedConfigError) as cm:
            parse_env(environ)
        for w in words:
            self.assertIn(w, str(cm.exception))

    def test_no_variables_is_a_world_of_one(self):
        e = parse_env({})
        self.assertEqual((e.rank, e.world_size, e.local_rank, e.source), (0, 1, 0, "single"))

    def test_torchrun_form_as_trainyard_sets_it(self):
        e = parse_env(env(TORCHRUN, TRAINYARD_RANK="1", TRAINYARD_JOB_ID="9"))
        self.assertEqual((e.rank, e.world_size, e.local_rank), (1, 4, 1))
        self.assertEqual((e.master_addr, e.master_port, e.source), ("10.0.0.5", 29400, "torchrun"))

    def test_one_worker_needs_no_rendezvous(self):
        e = parse_env({"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"})
        self.assertEqual((e.world_size, e.master_port), (1, None))

    def test_torchrun_errors_name_the_variable_and_fix(self):
        self.assertError(env(TORCHRUN, WORLD_SIZE=None), "WORLD_SIZE is not set", "RANK=1")
        self.assertError(env(TORCHRUN, RANK=None), "RANK is not set")
        self.assertError(env(TORCHRUN, RANK="4"), "RANK=4 is out of range", "0..3")
        self.assertError(env(TORCHRUN, RANK="x"), "RANK='x' is not an integer")
        self.assertError(env(TORCHRUN, WORLD_SIZE="0"), "WORLD_SIZE=0 must be >= 1")
        self.assertError(env(TORCHRUN, LOCAL_RANK=None), "LOCAL_RANK is not set")
        self.assertError(env(TORCHRUN, LOCAL_RANK="2"), "LOCAL_RANK=2 > RANK=1")
        self.assertError(env(TORCHRUN, LOCAL_WORLD_SIZE="1"), "LOCAL_RANK=1 is out of range")
        self.assertError(env(TORCHRUN, MASTER_ADDR=None), "MASTER_ADDR is not set", "export")
        self.assertError(env(TORCHRUN, MASTER_PORT=None), "MASTER_PORT is not set",
                         "MASTER_PORT=29500")
        self.assertError(env(TORCHRUN, MASTER_PORT="70000"), "not a TCP port")
        self.assertError(env(TORCHRUN, TRAINYARD_RANK="2"), "RANK=1 but TRAINYARD_RANK=2")

    def test_slurm_form(self):
        e = parse_env(SLURM)
        self.assertEqual((e.rank, e.world_size, e.local_rank, e.source), (5, 8, 1, "slurm"))
        self.assertEqual(e.master_addr, "gpu07")
        self.assertEqual(e.master_port, 20000 + 123456 % 20000)

    def test_slurm_step_variables_win_and_one_node_uses_loopback(self):
        e = parse_env(env(SLURM, SLURM_PROCID="1", SLURM_STEP_NUM_TASKS="2",
                          SLURM_STEP_NUM_NODES="1", MASTER_PORT="31000"))
        self.assertEqual((e.world_size, e.master_addr, e.master_port), (2, "127.0.0.1", 31000))

    def test_slurm_master_addr_overrides_the_node_list(self):
        self.assertEqual(parse_env(env(SLURM, MASTER_ADDR="head")).master_addr, "head")

    def test_torchrun_variables_win_over_slurm(self):
        self.assertEqual(parse_env(env(SLURM, **TORCHRUN)).source, "torchrun")

    def test_slurm_errors(self):
        self.assertError(env(SLURM, SLURM_NTASKS=None), "srun --ntasks")
        self.assertError(env(SLURM, SLURM_PROCID="8"), "SLURM_PROCID=8 is out of range")
        self.assertError(env(SLURM, SLURM_LOCALID=None), "SLURM_LOCALID is not set")
        self.assertError(env(SLURM, SLURM_JOB_NODELIST="???["), "scontrol show hostnames")
        self.assertError(env(SLURM, SLURM_JOB_ID=None), "MASTER_PORT is not set")

    def test_first_host_of_node_lists(self):
        for text, host in (("n1,n2", "n1"), ("gpu[003-004,9]", "gpu003"), ("a[1,2]-ib", "a1-ib"),
                           ("solo", "solo"), ("x[a-b]", None)):
            self.assertEqual(distributed._first_host(text), host, text)


@unittest.skipUnless(util.have_torch(), "needs torch")
class WorldOfOne(unittest.TestCase):
    """init() and wrap() in this process, with no variables: gloo on CPU, a world of 1."""

    def setUp(self):
        import torch
        torch.manual_seed(0)
        self.torch = torch
        self.ctx = distributed.init(env={})

    def tearDown(self):
        self.ctx.close()

    def train(self, dm, steps=4):
        torch = self.torch
        opt = torch.optim.SGD(dm.model.parameters(), lr=0.1)
        out = []
        for step in range(steps):
            x = torch.randn(8, 16)
            dm(x).square().mean().backward()
            opt.step()
            opt.zero_grad()
            out.append(dm.stats())
        return out

    def model(self):
        return self.torch.nn.Sequential(self.torch.nn.Linear(16, 32), self.torch.nn.Linear(32, 4))

    def test_context(self):
        self.assertEqual((self.ctx.rank, self.ctx.world_size, self.ctx.backend), (0, 1, "gloo"))
        self.assertEqual(self.ctx.device.type, "cpu")
        self.assertTrue(self.ctx.is_main)

    def test_bytes_are_counted_per_step(self):
        numel = 16 * 32 + 32 + 32 * 4 + 4
        for mode, per_elem in (("none", 4), ("fp16", 2)):
            stats = self.train(distributed.wrap(self.model(), compression=mode))
            self.assertEqual([s["comm_bytes"] for s in stats], [numel * per_elem] * 4, mode)
            for s in stats:
                self.assertGreaterEqual(s["comm_s"], 0)
                self.assertLessEqual(s["comm_wait_s"], s["step_time_s"])
                self.assertGreaterEqual(s["compute_s"], 0)

    def test_powersgd_compresses_after_its_start_step(self):
        dm = distributed.wrap(self.model(), compression="powersgd", powersgd_rank=1,
                              powersgd_start_iter=2)
        got = [s["comm_bytes"] for s in self.train(dm)]
        full = 4 * (16 * 32 + 32 + 32 * 4 + 4)
        # rank 1: P and Q of the 32x16 weight (32 + 16 floats) and of the 4x32 one (4 + 32);
        # the biases go uncompressed (32 + 4).
        self.assertEqual(got, [full, full] + [4 * (48 + 36 + 36)] * 2)
        saved = dm.comm_state()
        self.assertEqual((saved["iter"], saved["world_size"]), (4, 1))
        self.assertEqual(sorted(saved["error"][0]), ["0.bias", "0.weight", "1.bias", "1.weight"])
        self.assertEqual(sorted(saved["q"]), ["0.weight", "1.weight"])
        dm.load_comm_state(saved)
        self.assertEqual(len(self.train(dm, 1)), 1)

    def test_unsupported_compressions_say_what_to_use(self):
        with self.assertRaisesRegex(ValueError, "bf16.*gloo.*fp16"):
            distributed.wrap(self.model(), compression="bf16")
        with self.assertRaisesRegex(ValueError, "choose one of none, fp16, bf16, powersgd"):
            distributed.wrap(self.model(), compression="int8")
        with self.assertRaisesRegex(ValueError, "powersgd_start_iter=1"):
            distributed.wrap(self.model(), compression="powersgd", powersgd_start_iter=1)

    def test_state_without_powersgd_is_none(self):
        self.assertIsNone(distributed.wrap(self.model()).comm_state())


if __name__ == "__main__":
    unittest.main()
