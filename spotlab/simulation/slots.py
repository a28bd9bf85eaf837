"""Hours to whole slots, robust to float error: shared by the engine, the policies and the optimum."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..jobs.job import Job

if TYPE_CHECKING:
    from ..market.episodes import Episodes

EPS = 1e-9


def ceil_slots(hours: np.ndarray, slot_hours: float) -> np.ndarray:
    """ceil(hours / slot) robust to float error (exact values on the grid are not bumped up)."""
    return np.ceil(np.asarray(hours) / slot_hours - 1e-7)


def floor_slots(hours: np.ndarray, slot_hours: float) -> np.ndarray:
    return np.floor(np.asarray(hours) / slot_hours + 1e-7)


def horizon_slots(job: Job, slot_hours: float) -> int:
    """Slots from 0 up to the hard deadline (a partial last slot still counts)."""
    return int(ceil_slots(job.hard_deadline_h, slot_hours))


def run_horizon(job: Job, episodes: Episodes, deadline: str) -> int:
    """The slots a run simulates (its context's horizon): up to the hard deadline, or, under rules that set no
    deadline (`SimSettings.deadline` "none"), as far as the longest window goes."""
    if deadline == "none":
        return int(episodes.length.max())
    return horizon_slots(job, episodes.slot_hours)
