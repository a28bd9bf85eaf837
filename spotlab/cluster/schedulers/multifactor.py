"""``multifactor``: Slurm's multifactor priority reduced to the two factors a trace supports, age and size.

priority = ``weight_age`` x age factor + ``weight_size`` x size factor, highest first (Slurm then orders by
submit time: here queue order). As in Slurm, each factor lies in [0, 1]: the age factor is the time queued over
``max_age_s`` (``PriorityMaxAge``), capped at 1; the size factor is the share of the cluster's GPUs the job asks
for (its largest offered option), or one minus that when ``favor_small`` (``PriorityFavorSmall=YES``).
Defaults follow the configuration example of Slurm's multifactor priority page (slurm.schedmd.com/
priority_multifactor.html): ``PriorityWeightAge=1000``, ``PriorityWeightJobSize=1000``, ``PriorityMaxAge=14-0``
(14 days), ``PriorityFavorSmall=NO``; with these, size dominates until a job has waited days, so large jobs go
first. (slurm.conf's own defaults, weights 0, would be FIFO.) Fair share, partition, QOS and TRES factors have no
counterpart in the traces and are left out.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, Sequence

from ...params import Boolean, Interval
from .priority import PriorityScheduler, by_key

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["Multifactor"]


class Multifactor(PriorityScheduler):
    """Slurm-style age + job-size priority (module doc)."""

    name = "multifactor"
    _parameter_constraints = {"window": [Interval(Integral, 1, None)], "blocking": [Boolean()],
                              "weight_age": [Interval(Real, 0, None)], "weight_size": [Interval(Real, 0, None)],
                              "max_age_s": [Interval(Real, 0, None, closed="neither")],
                              "favor_small": [Boolean()]}

    def __init__(self, window: int = 128, blocking: bool = True, weight_age: float = 1000.0,
                 weight_size: float = 1000.0, max_age_s: float = 14 * 86400.0, favor_small: bool = False) -> None:
        super().__init__(window, blocking)
        self.weight_age = weight_age
        self.weight_size = weight_size
        self.max_age_s = max_age_s
        self.favor_small = favor_small
        self.check_params()

    def order(self, engine: Engine, jobs: Sequence[int]) -> list[int]:
        st = engine.state
        now, total = st.now, st.cluster.gpus
        keys = []
        for j in jobs:
            job = st.jobs[j]
            age = min((now - job.arrival_s) / self.max_age_s, 1.0)
            share = max(job.options[oi].gpus for oi in st.offered[j]) / total
            size = 1.0 - share if self.favor_small else share
            keys.append(-(self.weight_age * age + self.weight_size * size))
        return by_key(jobs, keys)
