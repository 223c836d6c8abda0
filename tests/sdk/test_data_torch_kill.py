"""Mid-epoch resume of data.resumable_dataloader through real kills (the harness is in
test_data_kill.py), 5 kills (50 with TY_SDK_SOAK=1): two DataLoader workers with random augmentation (Python random and
torch), and every resumed step must be bitwise the same as in an uninterrupted run.

Skipped when torch is not importable (install python3-torch).
"""

import os
import unittest

import sdk_test_util
from test_data_kill import KillHarness


@unittest.skipUnless(sdk_test_util.have_torch(),
                     "torch is not installed (apt-get install python3-torch): the resumable "
                     "DataLoader is not tested")
class ResumableDataLoaderKillTest(KillHarness):
    kills = 50 if os.environ.get("TY_SDK_SOAK") == "1" else 5  # each run imports torch (~1 s)

    def test_resumable_dataloader_resumes_bitwise_after_random_kills(self):
        self.run_kills("torch", 0.6)


if __name__ == "__main__":
    unittest.main()
