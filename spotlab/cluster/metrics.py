"""Job scores of a cluster run: waiting time, job completion time, bounded slowdown, utilisation.

Pure functions of a `ClusterResult`, over the jobs that finished (failed and rejected jobs have no completion):

- wait: seconds queued before the successful run (``queue_s``: earlier failed attempts excluded);
- JCT: finish - arrival;
- bounded slowdown: ``max((wait + run) / max(run, threshold_s), 1)``, RLScheduler's and RLTune's definition
  (Zhang et al., SC'20), with the threshold 10 s by default so that very short jobs do not dominate the mean;
- utilisation: GPU-seconds used / (cluster GPUs x makespan from the first arrival to the last release), as
  `ClusterResult.summary`.

`job_score` averages one of them; `log_scores` gives all four of an ended `Engine` straight from its log, the same
numbers bit for bit without building the result tables (a learning environment scores thousands of episodes);
`improvement` is the relative gain of a run over a baseline on the same jobs,
positive when the run is better (lower wait, JCT, slowdown; higher utilisation): what a learning agent's reward
can be built from.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import ClusterError
from .result import ClusterResult

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["METRICS", "bounded_slowdowns", "improvement", "jcts", "job_score", "log_scores", "utilisation", "waits"]

METRICS = ("bsld", "wait", "jct", "utilisation")
_HIGHER_IS_BETTER = {"utilisation"}


def _done(result: ClusterResult) -> pd.DataFrame:
    if not isinstance(result, ClusterResult):
        raise ClusterError(f"expected a ClusterResult (from simulate or Engine.result), got {type(result).__name__}")
    return result.jobs[result.jobs["status"] == "done"]


def waits(result: ClusterResult) -> np.ndarray:
    """Seconds each finished job waited in the queue."""
    return _done(result)["queue_s"].to_numpy(dtype=float)


def jcts(result: ClusterResult) -> np.ndarray:
    """Job completion time (finish - arrival, seconds) of each finished job."""
    return _done(result)["jct_s"].to_numpy(dtype=float)


def _check_threshold(threshold_s: float) -> None:
    if isinstance(threshold_s, bool) or not isinstance(threshold_s, (int, float)) or not threshold_s > 0 \
            or not math.isfinite(threshold_s):
        raise ClusterError(f"threshold_s must be a finite number > 0, got {threshold_s!r}")


def _slowdowns(wait: np.ndarray, run: np.ndarray, threshold_s: float) -> np.ndarray:
    return np.maximum((wait + run) / np.maximum(run, threshold_s), 1.0)


def bounded_slowdowns(result: ClusterResult, threshold_s: float = 10.0) -> np.ndarray:
    """``max((wait + run) / max(run, threshold_s), 1)`` of each finished job (module doc)."""
    _check_threshold(threshold_s)
    done = _done(result)
    run = (done["finish_s"] - done["start_s"]).to_numpy(dtype=float)
    wait = done["queue_s"].to_numpy(dtype=float)
    return _slowdowns(wait, run, threshold_s)


def utilisation(result: ClusterResult) -> float:
    """GPU-seconds used / (cluster GPUs x makespan); nan for a run without attempts."""
    _done(result)
    a = result.attempts
    if not len(a):
        return math.nan
    makespan = float(a["end_s"].max() - result.jobs["arrival_s"].min())
    return float(a["gpu_s"].sum()) / (result.capacity * makespan) if makespan > 0 else math.nan


def job_score(result: ClusterResult, metric: str = "bsld", threshold_s: float = 10.0) -> float:
    """The mean of ``metric`` (`METRICS`) over the finished jobs, or the utilisation; nan when none finished."""
    if metric not in METRICS:
        raise ClusterError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if metric == "utilisation":
        return utilisation(result)
    values = {"bsld": lambda: bounded_slowdowns(result, threshold_s), "wait": lambda: waits(result),
              "jct": lambda: jcts(result)}[metric]()
    return float(values.mean()) if values.size else math.nan


def log_scores(engine: Engine, threshold_s: float = 10.0) -> dict[str, float]:
    """Every score of `METRICS` (as `job_score` of ``engine.result()``, bit for bit) from the log of an ended
    run (`Engine.log`), without building the result tables: each job's values are the same expressions as
    `spotlab.cluster.result.build_result` writes, reduced by the same numpy calls."""
    _check_threshold(threshold_s)
    attempts, ended = engine.log()
    jobs = engine.jobs
    busy = [0.0] * len(jobs)
    for a in attempts:
        busy[a.job] += a.end - a.start
    wait, jct, start, finish = [], [], [], []
    for j, job in enumerate(jobs):
        ai = ended[j]
        if ai < 0:
            continue
        a = attempts[ai]
        if a.fails:
            continue
        end = a.end
        wait.append(end - job.arrival_s - busy[j])
        jct.append(end - job.arrival_s)
        start.append(a.start)
        finish.append(end)
    out = {}
    if wait:
        w, run = np.array(wait, dtype=float), np.array(finish, dtype=float) - np.array(start, dtype=float)
        out["bsld"] = float(_slowdowns(w, run, threshold_s).mean())
        out["wait"] = float(w.mean())
        out["jct"] = float(np.array(jct, dtype=float).mean())
    else:
        out["bsld"] = out["wait"] = out["jct"] = math.nan
    if attempts:
        makespan = float(max(a.end for a in attempts) - min(float(job.arrival_s) for job in jobs))
        used = np.array([jobs[a.job].options[a.option].gpus * (a.end - a.start) for a in attempts], dtype=float)
        out["utilisation"] = float(used.sum()) / (engine.cluster.gpus * makespan) if makespan > 0 else math.nan
    else:
        out["utilisation"] = math.nan
    return {name: out[name] for name in METRICS}


def improvement(score: float, baseline: float, metric: str = "bsld") -> float:
    """Relative gain of ``score`` over ``baseline`` for ``metric``: (baseline - score) / baseline for the
    lower-is-better metrics, (score - baseline) / baseline for utilisation; 0 when the baseline is 0."""
    if metric not in METRICS:
        raise ClusterError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    if not (math.isfinite(score) and math.isfinite(baseline)):
        raise ClusterError(f"improvement needs finite scores, got {score!r} and {baseline!r}")
    if baseline == 0:
        return 0.0
    gain = score - baseline if metric in _HIGHER_IS_BETTER else baseline - score
    return gain / abs(baseline)
