"""The accept stage: which options of each job can ever run on the cluster, and which jobs are rejected, why.

An option can never fit when no pool has its GPU type, it asks for more GPUs than a node without being a multiple
of the node size, or more whole nodes than its pool has. Such options are skipped and counted; a job left without
options is rejected with the reason before the run starts, never left to hang in the queue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from ..errors import ClusterError
from .state import Cluster, SimJob

__all__ = ["Admission", "admit", "check_jobs"]


@dataclass(frozen=True)
class Admission:
    """Per job: option index -> pools where it can ever fit (source order kept); the reason a job is rejected ("" if
    it is not); how many options were skipped over all jobs."""

    places: tuple[Mapping[int, tuple[int, ...]], ...]
    reasons: tuple[str, ...]
    skipped: int


def check_jobs(jobs: Sequence[SimJob]) -> None:
    """Every job a `SimJob`, job ids unique."""
    seen: set[int] = set()
    for i, job in enumerate(jobs):
        if not isinstance(job, SimJob):
            raise ClusterError(f"jobs[{i}] is a {type(job).__name__}, expected SimJob")
        if job.job_id in seen:
            raise ClusterError(f"duplicate job id {job.job_id} (jobs[{i}]); job ids must be unique")
        seen.add(job.job_id)


def admit(cluster: Cluster, jobs: Sequence[SimJob]) -> Admission:
    """Where each option of each job can ever go, and which jobs are rejected (module doc)."""
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
    return Admission(tuple(places), tuple(reasons), skipped)
