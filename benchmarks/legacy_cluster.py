"""Benchmark-only copy of the cluster simulator as it was before `spotlab.cluster` (one `simulate` with FIFO and
Sia-like as closures): `benchmarks/bench_cluster.py` times the engine against it and `tests/test_cluster_engine.py`
checks the engine reproduces it. Not part of the package; do not change it (its own classes, its own error).

An event-driven simulator of a shared GPU cluster running fine-tuning jobs, whatever chose their configurations.

The simulator does not know where a job's candidate configurations come from: a configuration source (rules,
a predictor, a recommender, an oracle) turns each job into a `SimJob` whose `Option`s carry both what the
scheduler *believes* (``est_rate``) and what actually *happens* (``true_rate``, ``fails``). Comparing sources then
means simulating the same jobs with different options.

Semantics (non-preemptive):

- **placement**: an option of ``gpus`` GPUs of type ``gpu`` goes to a pool of that type, tried in cluster order.
  If ``gpus <= gpus_per_node`` it takes GPUs of one node (best fit: the node with the fewest free GPUs that
  suffice, lowest id first, to keep whole nodes free for large jobs); otherwise it takes
  ``gpus / gpus_per_node`` whole free nodes (lowest ids), so ``gpus`` must be a multiple of the node size.
  An option that can never fit (no pool of its type, too many GPUs, not a node multiple) is skipped and counted;
  a job none of whose options can ever fit is *rejected* with the reason, never left to hang.
- **runs**: a failing option (out of memory, invalid configuration) holds its GPUs for ``fail_after_s``, then the
  job is re-queued at the tail with that option removed; once its options are exhausted the job is *failed*.
  With `SimJob.primary = k > 0` only the first k options are offered until all of them have failed, then the
  rest (fallbacks, e.g. trial and error after wrong predictions).
  A successful run holds its GPUs for ``setup_s + work / true_rate``; the setup part (profiling) is wasted.
- **policies** (`POLICIES`), applied after each batch of same-time events:

  - ``fifo``: strict queue order; the head job starts on the first of its options that fits now, else nothing
    starts (head-of-line blocking).
  - ``sia``: among the first ``window`` queued jobs and their options that fit now, start the (job, option) with
    the highest ``est_rate / gpus`` relative to that job's best ``est_rate / gpus`` over its remaining options
    (ties: earlier in the queue, then earlier option), and repeat until nothing fits, so smaller jobs backfill.
    This is only the throughput-aware allocation idea of Sia (Jayaram Subramanya et al., SOSP'23): real Sia
    also re-allocates and preempts running jobs and solves an integer program each round. ``window`` bounds the
    scan so a long queue costs O(window) per scheduling point.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from spotlab.errors import SpotlabError

__all__ = ["POLICIES", "Cluster", "ClusterError", "ClusterResult", "NodePool", "Option", "SimJob", "simulate"]

POLICIES = ("fifo", "sia")


class ClusterError(SpotlabError):
    """A cluster, job, option or simulation setting is ill-specified."""


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _is_real(x: object) -> bool:
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
            if not _is_int(v) or v < 1:
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
        if not _is_int(self.gpus) or self.gpus < 1:
            raise ClusterError(f"{what}: gpus must be a whole number >= 1, got {self.gpus!r}")
        for name in ("est_rate", "true_rate"):
            v = getattr(self, name)
            if not _is_real(v) or not math.isfinite(v) or v < 0:
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
        if not _is_int(self.job_id):
            raise ClusterError(f"job id must be a whole number, got {self.job_id!r}")
        what = f"job {self.job_id}"
        if not _is_real(self.arrival_s) or not math.isfinite(self.arrival_s) or self.arrival_s < 0:
            raise ClusterError(f"{what}: arrival_s must be a finite number >= 0, got {self.arrival_s!r}")
        if not _is_real(self.work) or not math.isfinite(self.work) or self.work <= 0:
            raise ClusterError(f"{what}: work must be a finite number > 0, got {self.work!r}")
        if not _is_real(self.setup_s) or not math.isfinite(self.setup_s) or self.setup_s < 0:
            raise ClusterError(f"{what}: setup_s must be a finite number >= 0, got {self.setup_s!r}")
        options = tuple(self.options) if isinstance(self.options, (list, tuple)) else None
        if options is None or not all(isinstance(o, Option) for o in options):
            raise ClusterError(f"{what}: options must be a sequence of Option, got {self.options!r}")
        object.__setattr__(self, "options", options)
        if not _is_int(self.primary) or self.primary < 0:
            raise ClusterError(f"{what}: primary must be a whole number >= 0, got {self.primary!r}")


# ----------------------------------------------------------------------------------------------- result


@dataclass(frozen=True)
class ClusterResult:
    """Per-job table, per-attempt log and the cluster's size; `summary` gives the headline numbers.

    ``jobs``: job_id, arrival_s, start_s / finish_s / jct_s of the successful run (a failed job's finish_s is
    the end of its last attempt), queue_s (time spent waiting, attempts excluded), attempts, failed_attempts,
    option (index in the job's options), gpu, gpus, label (of the successful option; -1, None, 0, "" otherwise),
    status ("done" / "failed" / "rejected"), skipped_options (options that can never fit), reason (why a job
    failed or was rejected). ``attempts``: job_id, pool (index), gpu, nodes (tuple of node ids in the pool),
    gpus, start_s, end_s, outcome ("done" / "oom"), label, gpu_s, wasted_gpu_s (a failed run, or the setup).
    """

    jobs: pd.DataFrame
    attempts: pd.DataFrame
    capacity: int
    policy: str
    options_skipped: int

    def summary(self) -> dict[str, float]:
        """JCT / queueing of done jobs (hours), makespan from the first arrival to the last GPU release,
        GPU-hours used and wasted, utilisation = used / (capacity x makespan), and job counts."""
        done = self.jobs[self.jobs["status"] == "done"]
        jct = done["jct_s"].to_numpy(dtype=float) / 3600
        a = self.attempts
        makespan = float(a["end_s"].max() - self.jobs["arrival_s"].min()) if len(a) else 0.0
        used = float(a["gpu_s"].sum())
        return {
            "mean_jct_h": float(jct.mean()) if jct.size else math.nan,
            "p95_jct_h": float(np.percentile(jct, 95)) if jct.size else math.nan,
            "mean_queue_h": float(done["queue_s"].mean() / 3600) if len(done) else math.nan,
            "makespan_h": makespan / 3600,
            "gpu_hours_used": used / 3600,
            "gpu_hours_wasted": float(a["wasted_gpu_s"].sum()) / 3600,
            "utilisation": used / (self.capacity * makespan) if makespan > 0 else math.nan,
            "jobs_done": int(len(done)),
            "jobs_failed": int((self.jobs["status"] == "failed").sum()),
            "jobs_rejected": int((self.jobs["status"] == "rejected").sum()),
            "options_skipped": int(self.options_skipped),
        }


# ------------------------------------------------------------------------------------------- simulation


class _Pools:
    """Free GPUs per node, bucketed by free count so that "does it fit" costs O(gpus_per_node)."""

    def __init__(self, cluster: Cluster) -> None:
        self.pools = cluster.pools
        self.free = [[p.gpus_per_node] * p.nodes for p in self.pools]
        self.buckets = [[set() for _ in range(p.gpus_per_node + 1)] for p in self.pools]
        for b, p in zip(self.buckets, self.pools):
            b[p.gpus_per_node].update(range(p.nodes))
        self.total_free = cluster.gpus

    def find(self, pi: int, gpus: int) -> list[tuple[int, int]] | None:
        """(node, GPUs) to take in pool ``pi`` for ``gpus`` GPUs now, or None."""
        per, buckets = self.pools[pi].gpus_per_node, self.buckets[pi]
        if gpus <= per:
            for f in range(gpus, per + 1):
                if buckets[f]:
                    return [(min(buckets[f]), gpus)]
            return None
        k = gpus // per
        if len(buckets[per]) < k:
            return None
        return [(node, per) for node in sorted(buckets[per])[:k]]

    def change(self, pi: int, alloc: list[tuple[int, int]], sign: int) -> None:
        """Take (sign=-1) or give back (sign=+1) an allocation."""
        free, buckets = self.free[pi], self.buckets[pi]
        for node, n in alloc:
            buckets[free[node]].discard(node)
            free[node] += sign * n
            buckets[free[node]].add(node)
            self.total_free += sign * n


@dataclass(frozen=True)
class _Attempt:
    job: int
    option: int
    pool: int
    alloc: tuple[tuple[int, int], ...]
    start: float
    end: float
    fails: bool


def _check_args(policy: str, fail_after_s: float, window: int) -> None:
    if policy not in POLICIES:
        raise ClusterError(f"unknown policy {policy!r}; known policies: {', '.join(POLICIES)}")
    if not _is_real(fail_after_s) or not math.isfinite(fail_after_s) or fail_after_s <= 0:
        raise ClusterError(f"fail_after_s must be a finite number > 0, got {fail_after_s!r}")
    if not _is_int(window) or window < 1:
        raise ClusterError(f"window must be a whole number >= 1, got {window!r}")


def _check_jobs(jobs: Sequence[SimJob]) -> None:
    seen: set[int] = set()
    for i, job in enumerate(jobs):
        if not isinstance(job, SimJob):
            raise ClusterError(f"jobs[{i}] is a {type(job).__name__}, expected SimJob")
        if job.job_id in seen:
            raise ClusterError(f"duplicate job id {job.job_id} (jobs[{i}]); job ids must be unique")
        seen.add(job.job_id)


def _placeable(cluster: Cluster, jobs: Sequence[SimJob]) -> tuple[list[dict[int, tuple[int, ...]]], list[str], int]:
    """Per job: option index -> pools where it can ever fit (option order kept); rejection reasons; skip count."""
    by_gpu: dict[str, list[int]] = {}
    for pi, p in enumerate(cluster.pools):
        by_gpu.setdefault(p.gpu, []).append(pi)
    types = ", ".join(by_gpu)
    cache: dict[tuple[str, int], tuple[tuple[int, ...], str]] = {}
    places, reasons, skipped = [], [], 0
    for job in jobs:
        ok: dict[int, tuple[int, ...]] = {}
        why = []
        for oi, o in enumerate(job.options):
            key = (o.gpu, o.gpus)
            if key not in cache:
                pis = by_gpu.get(o.gpu, [])
                fits = tuple(pi for pi in pis if not cluster.pools[pi].never_fits(o.gpus))
                reason = ("; ".join(cluster.pools[pi].never_fits(o.gpus) for pi in pis) if pis
                          else f"no {o.gpu} pool (the cluster has {types})")
                cache[key] = (fits, reason)
            fits, reason = cache[key]
            if fits:
                ok[oi] = fits
            else:
                skipped += 1
                why.append(f"option {oi} ({o.label or o.gpu} x{o.gpus}): {reason}")
        places.append(ok)
        reasons.append("" if ok else ("no option fits the cluster: " + " | ".join(why) if why else "no options"))
    return places, reasons, skipped


def simulate(
    cluster: Cluster,
    jobs: Iterable[SimJob],
    policy: str = "fifo",
    fail_after_s: float = 120.0,
    progress: bool = False,
    window: int = 64,
) -> ClusterResult:
    """Run ``jobs`` on ``cluster`` under ``policy`` ("fifo" or "sia", see module doc) until every job has ended.

    ``fail_after_s`` is how long a failing option holds its GPUs before the failure is noticed; ``window`` is how
    many queued jobs (from the head) "sia" considers per decision. ``progress`` shows a bar of ended jobs.
    """
    _check_args(policy, fail_after_s, window)
    if not isinstance(cluster, Cluster):
        raise ClusterError(f"cluster must be a Cluster (e.g. Cluster.parse('A100-80GB:4x8')), got {cluster!r}")
    jobs = list(jobs)
    _check_jobs(jobs)
    places, reasons, skipped = _placeable(cluster, jobs)
    state = _Pools(cluster)
    remaining = [list(p) for p in places]  # option indices still to try, source order
    later: list[list[int]] = [[] for _ in jobs]  # fallback options, offered once the primary ones have failed
    for j, job in enumerate(jobs):
        first = [oi for oi in remaining[j] if oi < job.primary]
        if job.primary and first:
            later[j] = [oi for oi in remaining[j] if oi >= job.primary]
            remaining[j] = first
    attempts: list[_Attempt] = []
    events: list[tuple[float, int, int, int]] = []  # (time, seq, job, attempt or -1 for an arrival)
    seq = 0
    for j in sorted(range(len(jobs)), key=lambda j: jobs[j].arrival_s):
        if remaining[j]:
            events.append((float(jobs[j].arrival_s), seq, j, -1))
            seq += 1
    heapq.heapify(events)
    queue: deque[int] = deque()
    ended = [-1] * len(jobs)  # index of the attempt that ended each job (-1: rejected)
    bar = tqdm(total=len(jobs), disable=not progress, desc=f"simulate {policy}", unit="job")
    bar.update(sum(1 for r in remaining if not r))

    def start(j: int, oi: int, pi: int, alloc: list[tuple[int, int]], now: float) -> None:
        nonlocal seq
        job, o = jobs[j], jobs[j].options[oi]
        end = now + (fail_after_s if o.fails else job.setup_s + job.work / o.true_rate)
        state.change(pi, alloc, -1)
        attempts.append(_Attempt(j, oi, pi, tuple(alloc), now, end, bool(o.fails)))
        heapq.heappush(events, (end, seq, j, len(attempts) - 1))
        seq += 1

    def fifo(now: float) -> None:
        while queue and state.total_free:
            j = queue[0]
            for oi in remaining[j]:
                g = jobs[j].options[oi].gpus
                hit = next(((pi, a) for pi in places[j][oi] if (a := state.find(pi, g)) is not None), None)
                if hit is not None:
                    queue.popleft()
                    start(j, oi, *hit, now)
                    break
            else:
                return

    def sia(now: float) -> None:
        while queue and state.total_free:
            found: dict[tuple[str, int], tuple[int, list[tuple[int, int]]] | None] = {}
            best = None  # (score, queue position, job, option, pool, allocation)
            for pos, j in enumerate(islice(queue, window)):
                opts = jobs[j].options
                top = max(opts[oi].est_rate / opts[oi].gpus for oi in remaining[j])
                for oi in remaining[j]:
                    o = opts[oi]
                    score = (o.est_rate / o.gpus) / top if top > 0 else 1.0
                    if best is not None and score <= best[0]:
                        continue
                    key = (o.gpu, o.gpus)
                    if key not in found:
                        found[key] = next(((pi, a) for pi in places[j][oi]
                                           if (a := state.find(pi, o.gpus)) is not None), None)
                    if found[key] is not None:
                        best = (score, pos, j, oi, *found[key])
                if best is not None and best[0] >= 1.0:
                    break  # nobody later in the queue can beat an earlier job's best option
            if best is None:
                return
            _, pos, j, oi, pi, alloc = best
            del queue[pos]
            start(j, oi, pi, alloc, now)

    schedule = fifo if policy == "fifo" else sia
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, j, ai = heapq.heappop(events)
            if ai < 0:
                queue.append(j)
                continue
            at = attempts[ai]
            state.change(at.pool, list(at.alloc), +1)
            if at.fails:
                remaining[j].remove(at.option)
                if not remaining[j] and later[j]:
                    remaining[j], later[j] = later[j], []
            if at.fails and remaining[j]:
                queue.append(j)
            else:
                ended[j] = ai
                bar.update(1)
        schedule(now)
    bar.close()
    return _result(cluster, jobs, policy, attempts, ended, reasons, places, skipped)


# numeric columns typed explicitly so that empty tables (no jobs, no attempts) have the same dtypes
_JOB_TYPES = {"job_id": "int64", "arrival_s": "float64", "start_s": "float64", "finish_s": "float64",
              "jct_s": "float64", "queue_s": "float64", "attempts": "int64", "failed_attempts": "int64",
              "option": "int64", "gpus": "int64", "skipped_options": "int64"}
_ATTEMPT_TYPES = {"job_id": "int64", "pool": "int64", "gpus": "int64", "start_s": "float64", "end_s": "float64",
                  "gpu_s": "float64", "wasted_gpu_s": "float64"}


def _result(cluster: Cluster, jobs: list[SimJob], policy: str, attempts: list[_Attempt], ended: list[int],
            reasons: list[str], places: list[dict[int, tuple[int, ...]]], skipped: int) -> ClusterResult:
    """The two tables, built once at the end (the event loop only appends to a list)."""
    pools = cluster.pools
    n_att, n_fail, busy = [0] * len(jobs), [0] * len(jobs), [0.0] * len(jobs)
    rows = []
    for a in attempts:
        job, o = jobs[a.job], jobs[a.job].options[a.option]
        gpu_s = o.gpus * (a.end - a.start)
        rows.append((job.job_id, a.pool, pools[a.pool].gpu, tuple(n for n, _ in a.alloc), o.gpus, a.start, a.end,
                     "oom" if a.fails else "done", o.label, gpu_s, gpu_s if a.fails else o.gpus * job.setup_s))
        n_att[a.job] += 1
        n_fail[a.job] += a.fails
        busy[a.job] += a.end - a.start
    att = pd.DataFrame(rows, columns=["job_id", "pool", "gpu", "nodes", "gpus", "start_s", "end_s", "outcome",
                                      "label", "gpu_s", "wasted_gpu_s"]).astype(_ATTEMPT_TYPES)
    table = []
    for j, job in enumerate(jobs):
        ai = ended[j]
        nan = math.nan
        if ai < 0:
            table.append((job.job_id, float(job.arrival_s), nan, nan, nan, nan, 0, 0, -1, None, 0, "", "rejected",
                          len(job.options) - len(places[j]), reasons[j]))
            continue
        a = attempts[ai]
        finish, queue_s = a.end, a.end - job.arrival_s - busy[j]
        skip = len(job.options) - len(places[j])
        if a.fails:
            table.append((job.job_id, float(job.arrival_s), nan, finish, nan, queue_s, n_att[j], n_fail[j], -1, None, 0,
                          "", "failed", skip, f"all {len(places[j])} placeable option(s) failed"))
        else:
            o = job.options[a.option]
            table.append((job.job_id, float(job.arrival_s), a.start, finish, finish - job.arrival_s, queue_s, n_att[j],
                          n_fail[j], a.option, o.gpu, o.gpus, o.label, "done", skip, ""))
    jobs_df = pd.DataFrame(table, columns=["job_id", "arrival_s", "start_s", "finish_s", "jct_s", "queue_s",
                                           "attempts", "failed_attempts", "option", "gpu", "gpus", "label",
                                           "status", "skipped_options", "reason"]).astype(_JOB_TYPES)
    return ClusterResult(jobs_df, att, cluster.gpus, policy, skipped)
