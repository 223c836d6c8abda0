"""Runs the SDK's test files that no part of its own (sdk_python_<part> in tests/CMakeLists.txt)
takes: every tests/sdk/test_*.py whose name does not start with test_<part> for a part named on
the command line. Exits non-zero when a test fails or when there is nothing to run."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


def main(parts):
    names = sorted(f[:-3] for f in os.listdir(HERE)
                   if f.startswith("test_") and f.endswith(".py")
                   and not any(f.startswith("test_" + p) for p in parts))
    if not names:
        print("no SDK test files left to run", file=sys.stderr)
        return 2
    sys.path.insert(0, HERE)
    suite = unittest.defaultTestLoader.loadTestsFromNames(names)
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
