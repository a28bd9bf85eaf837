"""The lost-time levels of the fixed-GPU-count DP (`fixed_count.py`): the exact, finite set of values the time not
spent working can take.

With a fixed GPU count every running slot does the same work, so the work done by the start of slot t is
`h * (t*slot - lost)`. The simulator pays the overhead `min(pending, slot)` per running slot, with
`pending = delta` after a reconfiguration, so with `delta = m*slot + r` (0 <= r < slot) every slot loses
either nothing, a whole slot or `r`. Hence `lost` is always `A*slot + B*r` for whole numbers A, B: a finite,
exact set of levels (no discretisation), bounded by the slack `horizon - L/h` (more lost time can never
finish). Equal sums are merged, so the Can't Be Late setting (slot 1/6 h, r = 0.1 h: multiples of 1/30 h up
to 4 h) has ~120 levels. `MAX_LEVELS` is where the DP stops being fast (`exact.py` then leaves the job to the
next DP or the MILP).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import SolverError

LEVEL_TOL = 1e-9  # lost-time sums closer than this (hours) are the same level
MAX_LEVELS = 20_000  # beyond this the DP is exact but not fast: `auto` leaves it to the MILP


@dataclass(frozen=True)
class LostLevels:
    """The lost-time levels `A*slot + B*r` up to the slack, and where +slot / +r lead (`n` = dead)."""

    values: np.ndarray
    plus_slot: np.ndarray
    plus_r: np.ndarray

    @property
    def n(self) -> int:
        return int(self.values.size)


def lost_levels(slack: float, slot: float, r: float, horizon: int) -> LostLevels:
    """Every sum `A*slot + B*r <= slack` (B <= horizon: at most one partial overhead per slot), merged
    within `LEVEL_TOL`. The set is closed under +slot and +r up to the slack, so transitions are lookups."""
    if slack < -LEVEL_TOL:
        return LostLevels(np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
    a_max = int(math.floor(max(slack, 0.0) / slot + 1e-9))
    b_max = min(horizon, int(math.floor(max(slack, 0.0) / r + 1e-9))) if r > 0 else 0
    if (a_max + 1) * (b_max + 1) > 50 * MAX_LEVELS:
        raise SolverError(f"the exact DP would need over {50 * MAX_LEVELS:,} lost-time levels here "
                          f"(overhead remainder {r:g} h vs slot {slot:g} h); use method='milp'")
    grid = (np.arange(a_max + 1)[:, None] * slot + np.arange(b_max + 1)[None, :] * r).ravel()
    grid = np.sort(grid[grid <= slack + LEVEL_TOL])
    keep = np.concatenate([[True], np.diff(grid) > LEVEL_TOL])
    values = grid[keep]

    def lookup(target: np.ndarray) -> np.ndarray:
        i = np.searchsorted(values, target - LEVEL_TOL)
        j = np.minimum(i, values.size - 1)
        hit = (i < values.size) & (np.abs(values[j] - target) <= LEVEL_TOL)
        return np.where(hit, j, values.size).astype(np.int64)

    plus_r = lookup(values + r) if r > 0 else np.arange(values.size)
    return LostLevels(values, lookup(values + slot), plus_r)
