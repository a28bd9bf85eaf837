"""``best_fit``: one node when it suffices, the tightest one; otherwise whole free nodes.

If ``gpus <= gpus_per_node`` the option takes GPUs of one node: the node with the fewest free GPUs that suffice,
lowest id first, to keep whole nodes free for large jobs. Otherwise it takes ``gpus / gpus_per_node`` whole free
nodes (lowest ids); the accept stage has already skipped options that are not a multiple of the node size.
"""

from __future__ import annotations

from ..state import Allocation, ClusterState
from .base import Placement

__all__ = ["BestFit"]


class BestFit(Placement):
    """Best fit on one node, whole free nodes beyond (module doc)."""

    name = "best_fit"

    def place(self, state: ClusterState, pool: int, gpus: int) -> Allocation | None:
        ps = state.pools[pool]
        per, by_free = ps.pool.gpus_per_node, ps.by_free
        if gpus <= per:
            for f in range(gpus, per + 1):
                if by_free[f]:
                    return ((min(by_free[f]), gpus),)
            return None
        k = gpus // per
        if len(by_free[per]) < k:
            return None
        return tuple((node, per) for node in sorted(by_free[per])[:k])

    def candidates(self, state: ClusterState, pool: int, gpus: int) -> tuple[Allocation, ...]:
        """The one best-fit allocation, or none."""
        alloc = self.place(state, pool, gpus)
        return () if alloc is None else (alloc,)
