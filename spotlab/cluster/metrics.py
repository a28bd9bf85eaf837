"""Job scores of a cluster run: waiting time, job completion time, bounded slowdown, utilisation.

Pure functions of a `ClusterResult`, over the jobs that finished (failed and rejected jobs have no completion):

- wait: seconds queued before the successful run (``queue_s``: earlier failed attempts excluded);
- JCT: finish - arrival;
- bounded slowdown: ``max((wait + run) / max(run, threshold_s), 1)``, RLScheduler's and RLTune's definition
  (Zhang et al., SC'20), with the threshold 10 s by default so that very short jobs do not dominate the mean;
- utilisation: GPU-seconds used / (cluster GPUs x makespan from the first arrival to the last release), as
  `ClusterResult.summary`.

`job_score` averages one of them; `improvement` is the relative gain of a run over a baseline on the same jobs,
positive when the run is better (lower wait, JCT, slowdown; higher utilisation): what a learning agent's reward
can be built from.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..errors import ClusterError
from .result import ClusterResult

__all__ = ["METRICS", "bounded_slowdowns", "improvement", "jcts", "job_score", "utilisation", "waits"]

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


def bounded_slowdowns(result: ClusterResult, threshold_s: float = 10.0) -> np.ndarray:
    """``max((wait + run) / max(run, threshold_s), 1)`` of each finished job (module doc)."""
    if isinstance(threshold_s, bool) or not isinstance(threshold_s, (int, float)) or not threshold_s > 0 \
            or not math.isfinite(threshold_s):
        raise ClusterError(f"threshold_s must be a finite number > 0, got {threshold_s!r}")
    done = _done(result)
    run = (done["finish_s"] - done["start_s"]).to_numpy(dtype=float)
    wait = done["queue_s"].to_numpy(dtype=float)
    return np.maximum((wait + run) / np.maximum(run, threshold_s), 1.0)


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
