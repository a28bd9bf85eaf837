"""What the cluster engine simulates: the cluster (node pools), the jobs (their options: belief and truth), and the
live state of a run (free GPUs per node, the queue, the options still offered, the running attempts).

The descriptions are frozen dataclasses that check themselves, so a bad cluster or job fails where it is written.
The live state is read by schedulers and placements and changed by the engine only (`spotlab.cluster.engine`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import numpy as np

from ..errors import ClusterError

__all__ = ["Allocation", "Attempt", "Cluster", "ClusterState", "Fit", "NodePool", "Option", "PoolState", "SimJob",
           "is_int", "is_real"]


def is_int(x: object) -> bool:
    """A whole number as the descriptions accept it: Python or numpy, never a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def is_real(x: object) -> bool:
    """A real number as the descriptions accept it: Python or numpy int or float, never a bool."""
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


# ------------------------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class NodePool:
    """``nodes`` identical nodes of ``gpus_per_node`` GPUs of type ``gpu``."""

    gpu: str
    nodes: int
    gpus_per_node: int

    def __post_init__(self) -> None:
        if not isinstance(self.gpu, str) or not self.gpu.strip():
            raise ClusterError(f"node pool: GPU type must be a non-empty string, got {self.gpu!r}")
        for name in ("nodes", "gpus_per_node"):
            v = getattr(self, name)
            if not is_int(v) or v < 1:
                raise ClusterError(f"node pool {self.gpu}: {name} must be a whole number >= 1, got {v!r}")

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def never_fits(self, gpus: int) -> str:
        """Why an option of ``gpus`` GPUs can never be placed here ("" when it can)."""
        g, n = self.gpus_per_node, self.nodes
        if gpus <= g:
            return ""
        if gpus % g:
            return f"{gpus} GPUs is more than a {self.gpu} node ({g}) and not a multiple of it"
        if gpus // g > n:
            return f"{gpus} GPUs needs {gpus // g} {self.gpu} nodes of {g}, the pool has {n}"
        return ""


@dataclass(frozen=True)
class Cluster:
    """Heterogeneous node pools; `Cluster.parse("A100-80GB:4x8,L40S-48GB:8x4")` reads the compact form."""

    pools: tuple[NodePool, ...]

    def __post_init__(self) -> None:
        pools = tuple(self.pools) if isinstance(self.pools, (list, tuple)) else self.pools
        if not isinstance(pools, tuple) or not pools:
            raise ClusterError("empty cluster: give at least one node pool, e.g. Cluster.parse('A100-80GB:4x8')")
        for p in pools:
            if not isinstance(p, NodePool):
                raise ClusterError(f"cluster pools must be NodePool, got {type(p).__name__} ({p!r})")
        object.__setattr__(self, "pools", pools)

    @classmethod
    def parse(cls, spec: str) -> Cluster:
        """``"GPU:NODESxGPUS_PER_NODE,..."``, e.g. ``"A100-80GB:4x8,L40S-48GB:8x4"``."""
        if not isinstance(spec, str) or not spec.strip():
            raise ClusterError(f"empty cluster spec {spec!r}; expected e.g. 'A100-80GB:4x8,L40S-48GB:8x4'")
        pools = []
        for piece in spec.split(","):
            gpu, colon, size = piece.strip().rpartition(":")
            nodes, x, per = size.strip().lower().partition("x")
            if not colon or not gpu.strip() or not x or not nodes.strip().isdigit() or not per.strip().isdigit():
                raise ClusterError(f"cluster spec {spec!r}: cannot read {piece.strip()!r}; each pool is "
                                   "GPU:NODESxGPUS_PER_NODE, e.g. 'A100-80GB:4x8'")
            pools.append(NodePool(gpu.strip(), int(nodes), int(per)))
        return cls(tuple(pools))

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    def __str__(self) -> str:
        return ",".join(f"{p.gpu}:{p.nodes}x{p.gpus_per_node}" for p in self.pools)


# ------------------------------------------------------------------------------------------------- jobs


@dataclass(frozen=True)
class Option:
    """One way to run a job: belief (``est_rate``) for the scheduler, truth (``true_rate``, ``fails``) for the run."""

    gpu: str
    gpus: int
    est_rate: float
    true_rate: float
    fails: bool
    label: str = ""

    def __post_init__(self) -> None:
        what = f"option {self.label or self.gpu!r}"
        if not isinstance(self.gpu, str) or not self.gpu.strip():
            raise ClusterError(f"{what}: GPU type must be a non-empty string, got {self.gpu!r}")
        if not is_int(self.gpus) or self.gpus < 1:
            raise ClusterError(f"{what}: gpus must be a whole number >= 1, got {self.gpus!r}")
        for name in ("est_rate", "true_rate"):
            v = getattr(self, name)
            if not is_real(v) or not math.isfinite(v) or v < 0:
                raise ClusterError(f"{what}: {name} must be a finite number >= 0, got {v!r}")
        if not isinstance(self.fails, (bool, np.bool_)):
            raise ClusterError(f"{what}: fails must be True or False, got {self.fails!r}")
        if not self.fails and self.true_rate <= 0:
            raise ClusterError(f"{what}: true_rate must be > 0 for an option that runs, got {self.true_rate!r}")


@dataclass(frozen=True)
class SimJob:
    """A job with ``work`` units to process and its options in the source's order of preference."""

    job_id: int
    arrival_s: float
    work: float
    options: tuple[Option, ...]
    setup_s: float = 0.0
    primary: int = 0  # > 0: only the first `primary` options are offered until they have all failed (fallbacks)

    def __post_init__(self) -> None:
        if not is_int(self.job_id):
            raise ClusterError(f"job id must be a whole number, got {self.job_id!r}")
        what = f"job {self.job_id}"
        if not is_real(self.arrival_s) or not math.isfinite(self.arrival_s) or self.arrival_s < 0:
            raise ClusterError(f"{what}: arrival_s must be a finite number >= 0, got {self.arrival_s!r}")
        if not is_real(self.work) or not math.isfinite(self.work) or self.work <= 0:
            raise ClusterError(f"{what}: work must be a finite number > 0, got {self.work!r}")
        if not is_real(self.setup_s) or not math.isfinite(self.setup_s) or self.setup_s < 0:
            raise ClusterError(f"{what}: setup_s must be a finite number >= 0, got {self.setup_s!r}")
        options = tuple(self.options) if isinstance(self.options, (list, tuple)) else None
        if options is None or not all(isinstance(o, Option) for o in options):
            raise ClusterError(f"{what}: options must be a sequence of Option, got {self.options!r}")
        object.__setattr__(self, "options", options)
        if not is_int(self.primary) or self.primary < 0:
            raise ClusterError(f"{what}: primary must be a whole number >= 0, got {self.primary!r}")


# ------------------------------------------------------------------------------------------- live state

Allocation = tuple[tuple[int, int], ...]
"""Where a run's GPUs are within one pool: ``((node, gpus), ...)``, node ids of that pool."""


Fit = tuple[int, Allocation]
"""A pool index and an allocation in it: where a (job, option) would go now (`Engine.fits`), what `Engine.start`
takes. A plain pair: schedulers ask for thousands of them per second."""


class Attempt(NamedTuple):
    """One run of a job: its option, where it ran and when; ``fails``: it ends by running out of memory.
    (A named tuple, immutable like a frozen dataclass and four times faster to make: one per start.)"""

    job: int
    option: int
    pool: int
    alloc: Allocation
    start: float
    end: float
    fails: bool


class PoolState:
    """Free GPUs per node of one pool, nodes bucketed by free count so that "does it fit" costs O(gpus_per_node).

    ``free[node]``: free GPUs of that node; ``by_free[f]``: the set of nodes with exactly ``f`` free GPUs;
    ``total_free``: their sum. Read them; only `ClusterState.take` / `ClusterState.give` change them.
    """

    __slots__ = ("pool", "free", "by_free", "total_free")

    def __init__(self, pool: NodePool) -> None:
        self.pool = pool
        self.free = [pool.gpus_per_node] * pool.nodes
        self.by_free: list[set[int]] = [set() for _ in range(pool.gpus_per_node + 1)]
        self.by_free[pool.gpus_per_node].update(range(pool.nodes))
        self.total_free = pool.gpus


class ClusterState:
    """The live state of one run: the clock, free GPUs per pool and node, the queue (job indices, head first), the
    options each job is still offered (``offered``; ``fallback``: offered once those have all failed) and the
    running attempts (``running``: job index -> `Attempt`).

    Jobs are indices into ``jobs``, options indices into a job's options. Schedulers and placements read this;
    the engine alone changes it, through `take` / `give` and its event loop.
    """

    def __init__(self, cluster: Cluster, jobs: Sequence[SimJob], placeable: Sequence[Sequence[int]]) -> None:
        self.cluster = cluster
        self.jobs = tuple(jobs)
        self.now = 0.0
        self.pools = tuple(PoolState(p) for p in cluster.pools)
        self.total_free = cluster.gpus
        self.queue: deque[int] = deque()
        self.running: dict[int, Attempt] = {}
        self.offered: list[list[int]] = [list(p) for p in placeable]
        self.fallback: list[list[int]] = [[] for _ in self.jobs]
        for j, job in enumerate(self.jobs):
            first = [oi for oi in self.offered[j] if oi < job.primary]
            if job.primary and first:
                self.fallback[j] = [oi for oi in self.offered[j] if oi >= job.primary]
                self.offered[j] = first

    def take(self, pool: int, alloc: Allocation) -> None:
        """Take an allocation's GPUs; a node id out of range or short of free GPUs is an error (nothing taken)."""
        free = self.pools[pool].free
        asked: dict[int, int] = {}
        for node, n in alloc:
            if not (is_int(node) and is_int(n) and 0 <= node < len(free) and n > 0):
                raise ClusterError(f"allocation {alloc!r} in pool {pool}: ({node!r}, {n!r}) is not (node id, GPUs "
                                   f">= 1) of a node of the pool ({len(free)} nodes)")
            asked[node] = asked.get(node, 0) + n
        short = [node for node, n in asked.items() if n > free[node]]
        if short:
            raise ClusterError(f"allocation {alloc!r} in pool {pool}: node {short[0]} has {free[short[0]]} free "
                               f"GPU(s), not {asked[short[0]]}")
        self.move(pool, alloc, -1)

    def give(self, pool: int, alloc: Allocation) -> None:
        """Give back an allocation taken before."""
        self.move(pool, alloc, +1)

    def move(self, pool: int, alloc: Allocation, sign: int) -> None:
        """Take (``sign=-1``) or give back (``+1``) an allocation known to be valid: no checks, for the hot path."""
        ps = self.pools[pool]
        free, by_free = ps.free, ps.by_free
        moved = 0
        for node, n in alloc:
            by_free[free[node]].discard(node)
            free[node] += sign * n
            by_free[free[node]].add(node)
            moved += n
        ps.total_free += sign * moved
        self.total_free += sign * moved
