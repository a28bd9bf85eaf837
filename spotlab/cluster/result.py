"""What a cluster run produced: the per-job table, the per-attempt log, and the headline numbers (`summary`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .state import Attempt, Cluster, SimJob

__all__ = ["ClusterResult", "build_result"]


@dataclass(frozen=True)
class ClusterResult:
    """Per-job table, per-attempt log and the cluster's size; `summary` gives the headline numbers.

    ``jobs``: job_id, arrival_s, start_s / finish_s / jct_s of the successful run (a failed job's finish_s is
    the end of its last attempt), queue_s (time spent waiting, attempts excluded), attempts, failed_attempts,
    option (index in the job's options), gpu, gpus, label (of the successful option; -1, None, 0, "" otherwise),
    status ("done" / "failed" / "rejected"), skipped_options (options that can never fit), reason (why a job
    failed or was rejected). ``attempts``: job_id, pool (index), gpu, nodes (tuple of node ids in the pool),
    gpus, start_s, end_s, outcome ("done" / "oom"), label, gpu_s, wasted_gpu_s (a failed run, or the setup).
    ``policy``: the scheduler's name.
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


# numeric columns typed explicitly so that empty tables (no jobs, no attempts) have the same dtypes
_JOB_TYPES = {"job_id": "int64", "arrival_s": "float64", "start_s": "float64", "finish_s": "float64",
              "jct_s": "float64", "queue_s": "float64", "attempts": "int64", "failed_attempts": "int64",
              "option": "int64", "gpus": "int64", "skipped_options": "int64"}
_JOB_COLUMNS = ["job_id", "arrival_s", "start_s", "finish_s", "jct_s", "queue_s", "attempts", "failed_attempts",
                "option", "gpu", "gpus", "label", "status", "skipped_options", "reason"]
_ATTEMPT_COLUMNS = ["job_id", "pool", "gpu", "nodes", "gpus", "start_s", "end_s", "outcome", "label", "gpu_s",
                    "wasted_gpu_s"]
_ATTEMPT_TYPES = {"job_id": "int64", "pool": "int64", "gpus": "int64", "start_s": "float64", "end_s": "float64",
                  "gpu_s": "float64", "wasted_gpu_s": "float64"}


def build_result(cluster: Cluster, jobs: Sequence[SimJob], policy: str, attempts: Sequence[Attempt],
                 ended: Sequence[int], reasons: Sequence[str], places: Sequence[Mapping[int, tuple[int, ...]]],
                 skipped: int) -> ClusterResult:
    """The two tables, built once at the end (the event loop only appends to a list). The attempts table is built
    column by column, creating no object per row but its nodes (a run of 10,000 jobs spends a third of its time
    here, and every object per row adds garbage-collector passes). ``ended[j]``: the attempt that ended job ``j``
    (-1: rejected)."""
    gpu_of = [p.gpu for p in cluster.pools]
    n = len(jobs)
    n_att, n_fail, busy = [0] * n, [0] * n, [0.0] * n
    aj, ap = [a.job for a in attempts], [a.pool for a in attempts]
    start, end, fails = [a.start for a in attempts], [a.end for a in attempts], [a.fails for a in attempts]
    opts = [jobs[a.job].options[a.option] for a in attempts]
    gpus = [o.gpus for o in opts]
    gpu_s = [g * (e - s) for g, s, e in zip(gpus, start, end)]
    for j, s, e, f in zip(aj, start, end, fails):
        n_att[j] += 1
        n_fail[j] += f
        busy[j] += e - s
    att = _frame({
        "job_id": [jobs[j].job_id for j in aj], "pool": ap, "gpu": [gpu_of[p] for p in ap],
        "nodes": [tuple([node for node, _ in a.alloc]) for a in attempts], "gpus": gpus, "start_s": start,
        "end_s": end, "outcome": ["oom" if f else "done" for f in fails], "label": [o.label for o in opts],
        "gpu_s": gpu_s,
        "wasted_gpu_s": [gs if f else g * jobs[j].setup_s for gs, f, g, j in zip(gpu_s, fails, gpus, aj)],
    }, _ATTEMPT_COLUMNS, len(attempts)).astype(_ATTEMPT_TYPES)
    table = []
    nan = math.nan
    for j, job in enumerate(jobs):
        ai = ended[j]
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
    jobs_df = pd.DataFrame(table, columns=_JOB_COLUMNS).astype(_JOB_TYPES)
    return ClusterResult(jobs_df, att, cluster.gpus, policy, skipped)


def _frame(columns: dict[str, Sequence], names: list[str], rows: int) -> pd.DataFrame:
    """A table from its columns; without rows, every column is untyped (object), as a table built from no rows,
    for `astype` to type."""
    return pd.DataFrame(columns, columns=names) if rows else pd.DataFrame([], columns=names)
