"""The placement interface: where ``gpus`` GPUs of one pool go now, given the whole live state.

A placement answers for a pool and a GPU count, seeing everything (`ClusterState`: free GPUs per node and nodes
bucketed by free count in every pool, the queue, the options each queued job is still offered, the running
attempts, the clock). It does not see which job asks, so the engine reuses its answer for every (job, option)
asking for the same GPU type and count until GPUs are taken or freed, or, for a placement that reads more than
the free GPUs (``free_gpus_only = False``: the queue, the clock), until the next batch of events.

Two steps, so that a placement can weigh alternatives: `candidates` lists allocations (say, those spanning the
fewest nodes and those with one node more), `choose` picks one (say, by a small integer program scoring
fragmentation, waste and load balance, or the room left for the next queued job); `place` is the two in a row.
A placement with a single obvious answer overrides `place` directly and lists that answer as its one candidate.
A new placement is one module here and one line in `spotlab.cluster.registry.PLACEMENTS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

from ...errors import ClusterError
from ...params import Params
from ..state import Allocation, ClusterState

__all__ = ["Placement"]


class Placement(Params, ABC):
    """Maps a started (job, option) onto nodes of a pool: an allocation ``((node, gpus), ...)`` or None.

    An allocation must take exactly ``gpus`` GPUs of pool ``pool``, each node giving at most its free GPUs;
    the engine checks that before it takes them. ``state`` is read-only.
    """

    name = ""
    param_error = ClusterError
    free_gpus_only = True  # the answer depends on the free GPUs alone (module doc)

    @abstractmethod
    def candidates(self, state: ClusterState, pool: int, gpus: int) -> Sequence[Allocation]:
        """The allocations worth choosing among for ``gpus`` GPUs of ``pool`` now (empty: it does not fit now)."""

    def choose(self, state: ClusterState, pool: int, candidates: Sequence[Allocation]) -> Allocation:
        """The candidate to use (a non-empty sequence from `candidates`): the first by default."""
        return candidates[0]

    def place(self, state: ClusterState, pool: int, gpus: int) -> Allocation | None:
        """Where ``gpus`` GPUs of ``pool`` go now, or None when they do not fit now."""
        found = self.candidates(state, pool, gpus)
        return self.choose(state, pool, found) if found else None
