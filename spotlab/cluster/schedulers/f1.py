"""``f1``: the F1 priority of Carastan-Santos and de Camargo (SC'17), as RLScheduler (Zhang et al., SC'20) uses
it as a baseline: ``log10(r) * n + 870 * log10(s)``, smallest first.

``r`` is the job's runtime, ``n`` its GPUs (processors in the original), ``s`` its submit time (``arrival_s``, in
the trace's seconds); like RLScheduler's code, ``r`` or ``s`` at or below 0 counts as 0.1, which keeps the
logarithm finite. A job with several options takes its lowest score. Runtimes are true by default (an oracle:
the traces carry no user estimate; RLTune's F1 sees true runtimes too) or estimated (``runtimes="estimated"``).
"""

from __future__ import annotations

import math
from numbers import Integral
from typing import TYPE_CHECKING, Sequence

from ...params import Boolean, Interval
from ..state import Option, SimJob
from .priority import RUNTIMES, PriorityScheduler, by_key, runtime

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["F1", "f1_score"]


def f1_score(job: SimJob, option: Option, runtimes: str = "true") -> float:
    """``log10(r) * n + 870 * log10(s)`` (module doc)."""
    r, s = runtime(job, option, runtimes), float(job.arrival_s)
    return math.log10(r if r > 0 else 0.1) * option.gpus + 870 * math.log10(s if s > 0 else 0.1)


class F1(PriorityScheduler):
    """Lowest F1 score first (module doc)."""

    name = "f1"
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
            keys.append(min(f1_score(job, job.options[oi], kind) for oi in st.offered[j]))
        return by_key(jobs, keys)
