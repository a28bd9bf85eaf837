"""``smallest_first``: the job asking for the fewest GPUs (over its offered options) first, queue order on ties.

Needs no runtime, so no oracle; RLTune lists it among its baselines ("smallest first").
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING, Sequence

from ...params import Boolean, Interval
from .priority import PriorityScheduler, by_key

if TYPE_CHECKING:
    from ..engine import Engine

__all__ = ["SmallestFirst"]


class SmallestFirst(PriorityScheduler):
    """Fewest GPUs first (module doc)."""

    name = "smallest_first"
    _parameter_constraints = {"window": [Interval(Integral, 1, None)], "blocking": [Boolean()]}

    def __init__(self, window: int = 128, blocking: bool = True) -> None:
        super().__init__(window, blocking)
        self.check_params()

    def order(self, engine: Engine, jobs: Sequence[int]) -> list[int]:
        st = engine.state
        keys = [min(st.jobs[j].options[oi].gpus for oi in st.offered[j]) for j in jobs]
        return by_key(jobs, keys)
