"""``scored``: a few candidate allocations (`candidates`), each scored (`score`), the lowest score taken.

The brute-force reference for ``milp``, which must choose the same candidate by an integer program. It reads the
queue (the next job's room), so the engine asks it again after every batch of events (``free_gpus_only`` is
False unless ``w_next`` is 0).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Sequence

from ...params import Boolean, Interval
from ..state import Allocation, ClusterState
from .base import Placement
from .candidates import candidate_allocations, fewest_nodes
from .score import PlacementProblem, Weights, next_demand

__all__ = ["ScoredPlacement"]

_WEIGHT = [Interval(Real, 0, None)]


class ScoredPlacement(Placement):
    """Candidates over the fewest nodes and one more (``spread``), or the engine's one-node / whole-node rule;
    the lowest weighted score of fragmentation, next-job room, waste and load (`score`)."""

    name = "scored"
    _parameter_constraints = {"spread": [Boolean()], "per_size": [Interval(Integral, 1, None)],
                              "w_frag": _WEIGHT, "w_next": _WEIGHT, "w_waste": _WEIGHT, "w_load": _WEIGHT,
                              "lookahead": [Interval(Integral, 1, None)]}

    def __init__(self, spread: bool = True, per_size: int = 4, w_frag: float = 1.0, w_next: float = 1.0,
                 w_waste: float = 0.5, w_load: float = 0.25, lookahead: int = 32) -> None:
        self.spread = spread
        self.per_size = per_size
        self.w_frag = w_frag
        self.w_next = w_next
        self.w_waste = w_waste
        self.w_load = w_load
        self.lookahead = lookahead
        self.check_params()

    @property
    def free_gpus_only(self) -> bool:  # type: ignore[override]
        """The next job's room reads the queue; without that term only the free GPUs count."""
        return self.w_next == 0

    @property
    def weights(self) -> Weights:
        return Weights(float(self.w_frag), float(self.w_next), float(self.w_waste), float(self.w_load))

    def candidates(self, state: ClusterState, pool: int, gpus: int) -> tuple[Allocation, ...]:
        ps = state.pools[pool]
        return candidate_allocations(ps.free, ps.pool.gpus_per_node, gpus, spread=self.spread,
                                     per_size=self.per_size)

    def problem(self, state: ClusterState, pool: int, candidates: Sequence[Allocation]) -> PlacementProblem:
        """What the choice among ``candidates`` depends on, read from the live state."""
        ps = state.pools[pool]
        per, gpus = ps.pool.gpus_per_node, sum(n for _, n in candidates[0])
        nxt = next_demand(state, pool, gpus, self.lookahead) if self.w_next else 0
        return PlacementProblem(tuple(ps.free), per, tuple(candidates), fewest_nodes(ps.free, per, gpus, self.spread),
                                nxt, self.weights)

    def decide(self, problem: PlacementProblem) -> tuple[int, float]:
        """The index of the chosen candidate and its score: here by scoring every candidate."""
        return problem.best()

    def choose(self, state: ClusterState, pool: int, candidates: Sequence[Allocation]) -> Allocation:
        if len(candidates) == 1:
            return candidates[0]
        return candidates[self.decide(self.problem(state, pool, candidates))[0]]
