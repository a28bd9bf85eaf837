"""``sjf``: shortest job first, by the runtime of the job's quickest offered option.

With ``runtimes="true"`` (the default) it is an oracle: it knows how long every job will run, which no real
scheduler does (the traces carry no user estimate); ``"estimated"`` ranks by ``work / est_rate`` instead.
Ties keep queue order, so with equal runtimes it is FCFS. Blocking or not as every `PriorityScheduler`.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING, Sequence

from ...params import Boolean, Interval
from .priority import RUNTIMES, PriorityScheduler, by_key, runtime

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["ShortestJobFirst"]


class ShortestJobFirst(PriorityScheduler):
    """Shortest (true, by default: an oracle) runtime first (module doc)."""

    name = "sjf"
    _parameter_constraints = {"window": [Interval(Integral, 1, None)], "blocking": [Boolean()],
                              "runtimes": [RUNTIMES]}

    def __init__(self, window: int = 128, blocking: bool = True, runtimes: str = "true") -> None:
        super().__init__(window, blocking)
        self.runtimes = runtimes
        self.check_params()

    def order(self, engine: Engine, jobs: Sequence[int]) -> list[int]:
        st, kind = engine.state, self.runtimes
        keys = []
        for j in jobs:
            job = st.jobs[j]
            keys.append(min(runtime(job, job.options[oi], kind) for oi in st.offered[j]))
        return by_key(jobs, keys)
