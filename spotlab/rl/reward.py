"""The episode's reward: the relative gain of a job score over a heuristic scheduler on the same window.

Scores are those of `spotlab.cluster.metrics` (`SCORES`): ``bsld``, mean bounded slowdown (the default, RLTune's),
``wait`` and ``jct``, mean queueing delay and job completion time (s), and ``utilisation``, the only one where
higher is better. `gain` is (baseline - agent) / baseline for the lower-is-better scores and
(agent - baseline) / baseline for utilisation, so it is 0 for the heuristic against itself and 0.3 means 30%
better than it. Unlike `metrics.improvement`, a baseline under a floor (no queueing at all: 0 s of wait) is
taken as the floor (1 s), so an agent that makes jobs wait where the heuristic did not is still penalised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cluster.metrics import METRICS, job_score
from ..errors import RLError

if TYPE_CHECKING:
    from ..cluster.result import ClusterResult

__all__ = ["SCORES", "check_score", "gain", "scores"]

SCORES = METRICS
_HIGHER_IS_BETTER = {"utilisation"}
_FLOOR = {"bsld": 1.0, "wait": 1.0, "jct": 1.0, "utilisation": 1e-9}


def scores(result: ClusterResult) -> dict[str, float]:
    """Every score of `SCORES` for one finished run (jobs that were rejected or failed do not count)."""
    return {name: job_score(result, name) for name in SCORES}


def check_score(name: str) -> str:
    if name not in SCORES:
        raise RLError(f"unknown job score {name!r}; known: {', '.join(SCORES)}")
    return name


def gain(agent: float, baseline: float, name: str = "bsld") -> float:
    """The relative gain of ``agent`` over ``baseline`` on score ``name`` (module doc); positive is better."""
    check_score(name)
    base = max(float(baseline), _FLOOR[name])
    if name in _HIGHER_IS_BETTER:
        return (float(agent) - float(baseline)) / base
    return (float(baseline) - float(agent)) / base
