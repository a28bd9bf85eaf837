"""The episode's reward: the relative gain of a job score over a heuristic scheduler on the same window.

Scores (`SCORES`), from a finished run's per-job table:

- ``slowdown`` (the default, RLTune's): mean bounded slowdown of the jobs that ran,
  max((finish - arrival) / max(run, ``TAU_S``), 1), with TAU_S = 10 s so that very short jobs do not dominate;
- ``wait``: mean queueing delay (s); ``jct``: mean job completion time (s);
- ``utilisation``: GPU-seconds used / (GPUs x makespan), the only one where higher is better.

`gain` is (baseline - agent) / baseline for the lower-is-better scores and (agent - baseline) / baseline for
utilisation, so it is 0 for the heuristic against itself and 0.3 means 30% better than it. A baseline below a
floor (no queueing at all) is taken as the floor (1 s of wait or JCT), so the gain stays finite.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import RLError

if TYPE_CHECKING:
    from ..cluster.result import ClusterResult

__all__ = ["SCORES", "TAU_S", "gain", "score", "scores"]

TAU_S = 10.0
SCORES = ("slowdown", "wait", "jct", "utilisation")
_HIGHER_IS_BETTER = {"utilisation"}
_FLOOR = {"slowdown": 1.0, "wait": 1.0, "jct": 1.0, "utilisation": 1e-9}


def scores(result: ClusterResult) -> dict[str, float]:
    """Every score of `SCORES` for one finished run (jobs that were rejected or failed do not count)."""
    jobs = result.jobs
    done = jobs[jobs["status"] == "done"]
    if done.empty:
        return {k: math.nan for k in SCORES}
    jct = done["jct_s"].to_numpy(dtype=float)
    run = done["finish_s"].to_numpy(dtype=float) - done["start_s"].to_numpy(dtype=float)
    slowdown = np.maximum(jct / np.maximum(run, TAU_S), 1.0)
    return {"slowdown": float(slowdown.mean()), "wait": float(done["queue_s"].mean()), "jct": float(jct.mean()),
            "utilisation": float(result.summary()["utilisation"])}


def score(result: ClusterResult, name: str = "slowdown") -> float:
    """One score of a finished run."""
    check_score(name)
    return scores(result)[name]


def check_score(name: str) -> str:
    if name not in SCORES:
        raise RLError(f"unknown job score {name!r}; known: {', '.join(SCORES)}")
    return name


def gain(agent: float, baseline: float, name: str = "slowdown") -> float:
    """The relative gain of ``agent`` over ``baseline`` on score ``name`` (module doc); positive is better."""
    check_score(name)
    base = max(float(baseline), _FLOOR[name])
    if name in _HIGHER_IS_BETTER:
        return (float(agent) - float(baseline)) / base
    return (float(baseline) - float(agent)) / base
