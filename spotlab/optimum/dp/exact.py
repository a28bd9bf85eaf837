"""Which exact DP applies to a job: the fixed-count DP when its lost-time levels are few enough, else the
work-lattice DP, else the Pareto-label DP; None when none does (the MILP then solves it)."""

from __future__ import annotations

from ...jobs.job import Job
from .fixed_count import FixedCountDP, dp_applies
from .lost_time import MAX_LEVELS
from .pareto_labels import ParetoLabelDP
from .work_lattice import WorkLatticeDP


def exact_dp(job: Job, horizon: int, slot_hours: float, must_finish: bool = True, billing: str = "fractional"):
    """The exact DP that applies to this job, or None: the lost-time DP of a fixed GPU count when it is small
    enough, else the work-lattice DP when the work per slot is on a lattice of a manageable size, else the
    Pareto-label DP for a value >= 0 (which may still give up on a window: `TooManyLabels`)."""
    if dp_applies(job):
        dp = FixedCountDP(job, horizon, slot_hours, must_finish, billing)
        if dp.levels.n <= MAX_LEVELS:
            return dp
    lattice = WorkLatticeDP(job, horizon, slot_hours, must_finish, billing)
    if lattice.applies:
        return lattice
    labels = ParetoLabelDP(job, horizon, slot_hours, must_finish, billing)
    return labels if labels.applies else None
