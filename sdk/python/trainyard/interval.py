"""How often to checkpoint: Young's first-order rule T = sqrt(2 * C * MTBF).

C is the cost of one checkpoint in seconds and MTBF the mean time between
interruptions (failures and preemptions). Checkpointing more often wastes time
saving; less often loses more work per interruption; T balances the two to
first order (Young, CACM 1974). With background saves, C is the stall plus
the time until the save commits, since an interruption before the commit loses
the work as if no save had started.
"""

import logging
import math
import os

log = logging.getLogger("trainyard")

MTBF_ENV = "TRAINYARD_MTBF_SECONDS"


def young_interval(save_cost_s, mtbf_s=None):
    """Seconds between checkpoints. MTBF comes from TRAINYARD_MTBF_SECONDS when
    that is set (the cluster's observed rate), else from `mtbf_s`."""
    if save_cost_s < 0:
        raise ValueError("save_cost_s must be >= 0")
    source = "argument"
    env = os.environ.get(MTBF_ENV, "").strip()
    if env:
        try:
            value = float(env)
        except ValueError:
            value = -1.0
        if value > 0 and math.isfinite(value):
            mtbf_s, source = value, MTBF_ENV
        else:
            log.warning("trainyard: ignoring %s=%r (not a positive number)", MTBF_ENV, env)
    if mtbf_s is None or not mtbf_s > 0:
        raise ValueError("no MTBF: pass mtbf_s > 0 or set %s" % MTBF_ENV)
    interval = math.sqrt(2.0 * save_cost_s * mtbf_s)
    log.info("trainyard: checkpoint every %.1f s = sqrt(2 * save cost %.3f s * MTBF %.0f s "
             "from %s)", interval, save_cost_s, mtbf_s, source)
    return interval
