"""The score of a candidate allocation (lower is better): fragmentation, room for the next job, waste, load.

After the candidate is taken:

- **fragmentation**: free GPUs stranded on partly used nodes of the pool (0 < free < node size), in nodes'
  worth (GPUs / node size): they can only serve jobs small enough to share a node;
- **next fit**: 1 if the next queued job (`next_demand`) could no longer be placed compactly, on as few nodes as
  an empty pool would give it (`candidates.fits_compactly`), else 0;
- **waste**: nodes the job spans beyond the fewest that could hold it now: each one adds cross-node traffic,
  GPU time spent communicating rather than computing;
- **load**: the highest share of a node's GPUs in use among the nodes the job lands on: lower spreads the load
  over emptier nodes, which fragmentation pulls the other way.

score = ``w_frag`` x fragmentation + ``w_next`` x next fit + ``w_waste`` x waste + ``w_load`` x load
+ `TIE` x the candidate's index, the last term so that ties go to the earlier candidate, the same way for the
brute force here and the integer program of `milp`. The weights are our choice (RLTune names these criteria
without publishing one set of weights); all are parameters of the placements.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import islice
from typing import Sequence

from ..state import Allocation, ClusterState
from .candidates import fits_compactly

__all__ = ["TIE", "PlacementProblem", "Weights", "next_demand", "stranded"]

TIE = 1e-4  # per candidate index: far below any weight's step, far above the solvers' tolerances


@dataclass(frozen=True)
class Weights:
    """The weights of the four criteria (module doc)."""

    frag: float = 1.0
    next_fit: float = 1.0
    waste: float = 0.5
    load: float = 0.25


def stranded(free: Sequence[int], gpus_per_node: int) -> int:
    """Free GPUs on partly used nodes."""
    return sum(f for f in free if 0 < f < gpus_per_node)


def next_demand(state: ClusterState, pool: int, gpus: int, lookahead: int = 32) -> int:
    """The GPUs of the next queued job that could use ``pool``, 0 if none among the first ``lookahead`` queued.

    A placement is not told which job asks, so the first queued job offered an option of ``gpus`` GPUs of this
    pool's type is taken to be the one asking and skipped; the next job is the first other one with an offered
    option of this pool's GPU type that can ever fit the pool (its first such option).
    """
    ps = state.pools[pool]
    gpu, jobs, offered = ps.pool.gpu, state.jobs, state.offered
    asker_seen = False
    for j in islice(state.queue, lookahead):
        opts = jobs[j].options
        mine = [opts[oi].gpus for oi in offered[j] if opts[oi].gpu == gpu and not ps.pool.never_fits(opts[oi].gpus)]
        if not mine:
            continue
        if not asker_seen and gpus in mine:
            asker_seen = True
            continue
        return mine[0]
    return 0


@dataclass(frozen=True)
class PlacementProblem:
    """Everything a candidate's score depends on: free GPUs per node of the pool, node size, the candidates,
    the fewest nodes that could hold the job now, the next job's GPUs (0: none) and the weights."""

    free: tuple[int, ...]
    gpus_per_node: int
    candidates: tuple[Allocation, ...]
    fewest: int
    next_gpus: int
    weights: Weights

    def after(self, index: int) -> list[int]:
        """Free GPUs per node once candidate ``index`` is taken."""
        free = list(self.free)
        for node, n in self.candidates[index]:
            free[node] -= n
        return free

    def terms(self, index: int) -> tuple[float, int, int, float]:
        """(fragmentation in nodes' worth, next job blocked 0/1, extra nodes, load) of candidate ``index``."""
        per, alloc = self.gpus_per_node, self.candidates[index]
        free = self.after(index)
        blocked = int(self.next_gpus > 0 and not fits_compactly(free, per, self.next_gpus))
        load = max((per - free[node]) / per for node, _ in alloc)
        return stranded(free, per) / per, blocked, len(alloc) - self.fewest, load

    def score(self, index: int) -> float:
        """The candidate's score (module doc), tie term included."""
        frag, blocked, waste, load = self.terms(index)
        w = self.weights
        return w.frag * frag + w.next_fit * blocked + w.waste * waste + w.load * load + TIE * index

    def best(self) -> tuple[int, float]:
        """The candidate with the lowest score, by trying each (the first on exact ties), and its score."""
        scores = [self.score(i) for i in range(len(self.candidates))]
        i = min(range(len(scores)), key=scores.__getitem__)
        return i, scores[i]
