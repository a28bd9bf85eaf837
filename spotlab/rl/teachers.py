"""Teachers: simple rules that choose a queue slot from the agent's own observation and mask, for the imitation
warm start (`spotlab.rl.imitation`) and as reference choosers in the environment's tests.

- ``fcfs``: slot 0, the head of the queue (through the environment this is the engine's ``fifo``: a head that
  does not fit is waited for);
- ``first_fit``: the first job that can start now (FCFS with greedy backfilling);
- ``smallest``: among the jobs that can start now, the one asking for the fewest GPUs per node (first in queue
  order on ties).

They see exactly what the agent sees (`spotlab.rl.features`), so the network can represent each of them.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..errors import RLError
from .features import FEATURES

__all__ = ["TEACHERS", "check_teacher", "teacher"]

_CAN, _SIZE = FEATURES.index("can_start"), FEATURES.index("size")


def _fcfs(obs: np.ndarray, mask: np.ndarray) -> int:
    return 0


def _first_fit(obs: np.ndarray, mask: np.ndarray) -> int:
    ok = np.flatnonzero(mask & (obs[:, _CAN] > 0))
    return int(ok[0]) if ok.size else 0


def _smallest(obs: np.ndarray, mask: np.ndarray) -> int:
    ok = np.flatnonzero(mask & (obs[:, _CAN] > 0))
    return int(ok[np.argmin(obs[ok, _SIZE])]) if ok.size else 0


TEACHERS: dict[str, Callable[[np.ndarray, np.ndarray], int]] = {
    "fcfs": _fcfs, "first_fit": _first_fit, "smallest": _smallest}


def check_teacher(name: str) -> str:
    if name not in TEACHERS:
        raise RLError(f"unknown teacher {name!r}; known: {', '.join(TEACHERS)}")
    return name


def teacher(name: str) -> Callable[[np.ndarray, np.ndarray], int]:
    """The rule ``name``: (observation, mask) -> slot."""
    return TEACHERS[check_teacher(name)]
