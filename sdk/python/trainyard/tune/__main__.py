"""`python -m trainyard.tune --probe ...`: see trainyard.tune.probe."""

import sys

from .probe import main

sys.exit(main())
