"""CHC's fluid tail read from the past (`chc.CHC`): what the hours after a window offer, for every window that
re-plans at a slot at once, and the restarts a job following spot pays (`restart_slots`, `restart_share`).

Per window, from the last `train_hours` observed (the history before the job included) and the window's own last
slot, in two tiers: spot GPUs usable alone (min(a, N_max) where a >= N_min) at the mean spot price there, and hours
of 0 < a < N_min spot GPUs run beside N_min - a on-demand ones, as N_min GPU-hours at their mean blended price;
each by time of day, moved towards the window's last slot as far as the past says a level persists
(`predict.reversion`). Only the share of a spot hour left after the restarts that following spot took in the past
counts as work, and the rest stalls the job (why: docs/decisions/chc-restart-discount.md, chc-tail.md).

Why all windows at once: a leaderboard cell re-plans 180 windows at every slot, and per window these are some
forty numpy calls on a week of slots, more than the window's DP. Windows with as many slots of past are stacked
and computed as rows; what would change with the order of a sum (a mean of prices, the lag-h products) is
computed row by row as before, so each window's tail is the same to the bit as computed alone.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..jobs.job import Job
from ..optimum.window_tail import interp
from ..optimum.window_types import TailForecast
from ..predict.reversion import daily_profile, lag_slopes


def past_tails(job: Job, avail: Sequence[np.ndarray], price: Sequence[np.ndarray], bounds: np.ndarray,
               ahead: np.ndarray, lag0: int, slot_hours: float, seen: np.ndarray,
               od: np.ndarray) -> list[TailForecast]:
    """Per window: the tail over the blocks `bounds` (hours; the same for every window, slots `ahead` of now in
    them, the first `lag0` + 1 ahead of the window's last slot), from its recent availability and spot price
    (`avail[r]`, `price[r]`; not finite: none), the availability its window ends on (`seen[r]`) and its
    on-demand price (`od[r]`). Pasts of different lengths are rows of one array, each of its own length."""
    G = len(avail)
    n = np.array([np.size(a) for a in avail], dtype=np.int64)
    if not G:
        return []
    N = int(n.max())
    a, p = np.zeros((G, N)), np.full((G, N), np.nan)  # after a row's end: no spot and no price
    for r in range(G):
        a[r, :n[r]] = np.ravel(avail[r])
        p[r, :n[r]] = np.ravel(price[r])
    return _tails_of(job, a, p, n, bounds, ahead, lag0, slot_hours, np.asarray(seen, dtype=float),
                     np.asarray(od, dtype=float))


def _tails_of(job: Job, a: np.ndarray, p: np.ndarray, size: np.ndarray, bounds: np.ndarray, ahead: np.ndarray,
              lag0: int, dt: float, seen: np.ndarray, od: np.ndarray) -> list[TailForecast]:
    """`past_tails` of windows whose pasts are the rows of `a` and `p`, row r of length size[r]."""
    G = a.shape[0]
    first = int(np.floor(bounds[0] / dt + 1e-9))
    last = int(np.ceil(bounds[-1] / dt - 1e-9))
    a, p, pure, mixed = tiers(job, a, p)
    edges = np.arange(first, last + 1) * dt

    def per_block(cap: np.ndarray) -> np.ndarray:
        return block_hours(cap, bounds, edges, dt)

    level = np.where(seen >= job.n_min, np.minimum(seen, float(job.n_max)), 0.0)
    cap_pure = _profiles(pure, size, ahead, lag0, level, dt, job.n_max)
    cap_mixed = np.zeros((G, ahead.size))
    need = mixed.any(axis=1) | ((0 < seen) & (seen < job.n_min))  # N_min = 1: never any
    if need.any():
        toward = np.where((0 < seen) & (seen < job.n_min), float(job.n_min), 0.0)
        cap_mixed[need] = _profiles(mixed[need], size[need], ahead, lag0, toward[need], dt, job.n_max)
    ok_p = np.isfinite(p)
    good = (pure > 0) & ok_p
    blend = (mixed > 0) & ok_p
    on = pure > 0
    # a spot hour in the tail pays for the restarts its spells need: only the share `useful` does work (counted on
    # the spot GPUs held: a mixed hour whose spot count changes restarts too)
    useful = restart_share(np.where(a > 0, np.minimum(a, job.n_max), 0.0), dt, job.overhead_h, size)
    raw, raw_mixed = per_block(cap_pure), per_block(cap_mixed)
    hours, n = np.diff(bounds), bounds.size - 1
    out = []
    for r in range(G):  # means whose sums depend on the order: each row's own, as one window's
        spot_price = float(np.mean(p[r][good[r]])) if good[r].any() else float(od[r])
        mixed_price = float(np.mean((a[r][blend[r]] * p[r][blend[r]] + (job.n_min - a[r][blend[r]]) * od[r])
                                    / job.n_min)) if blend[r].any() else float(od[r])
        mean_level = float(pure[r][on[r]].mean()) if on[r].any() else float(job.n_max)
        # a restart stalls the whole job: the share 1 - useful of the hours spot is there (its GPU-hours over its
        # mean level while there) is time the job cannot work in, on-demand GPUs included
        u = float(useful[r])
        stalled = (1.0 - u) * (raw[r] / mean_level + raw_mixed[r] / float(job.n_min))  # capped at a block later

        def priced(c: float) -> np.ndarray:
            return np.full(n, c / u if u > 0 else float(od[r]))

        out.append(TailForecast(hours=hours, spot_gpu_hours=raw[r] * u, spot_price=priced(spot_price),
                                od_price=np.full(n, float(od[r])), stalled_hours=stalled,
                                mixed_gpu_hours=raw_mixed[r] * u, mixed_price=priced(mixed_price)))
    return out


def tiers(job: Job, a: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Availability (not finite: 0) and spot price (not finite: NaN), and the GPUs of the two tiers: spot usable
    alone (min(a, N_max) where a >= N_min) and spot below N_min, which still runs the job beside N_min - a
    on-demand GPUs (the window problem mixes them too): such an hour offers N_min GPU-hours at their blended price,
    a dearer tier of its own."""
    a = np.where(np.isfinite(a), a, 0.0)
    p = np.where(np.isfinite(p), p, np.nan)
    pure = np.where(a >= job.n_min, np.minimum(a, job.n_max), 0.0)
    mixed = np.where((a > 0) & (a < job.n_min), float(job.n_min), 0.0)
    return a, p, pure, mixed


def block_hours(cap: np.ndarray, bounds: np.ndarray, edges: np.ndarray, dt: float) -> np.ndarray:
    """The integral over each block (`bounds`, hours) of each row's GPUs per slot (`cap`, slots starting at
    `edges`), in GPU-hours (`np.interp` of the running sum, to the bit)."""
    cum = np.concatenate([np.zeros((cap.shape[0], 1)), np.cumsum(cap * dt, axis=1)], axis=1)
    at = interp(bounds[None, :], edges[None, None, :], cum[:, None, :], np.full((1, 1), edges.size))
    return np.maximum(np.diff(at, axis=1), 0.0)


def _profiles(usable: np.ndarray, n: np.ndarray, ahead: np.ndarray, lag0: int, level: np.ndarray, dt: float,
              n_max: int) -> np.ndarray:
    """Per row (of length n[r]), expected GPUs of `usable` `ahead` slots on: its time-of-day mean when two days or
    more are known, else its mean, moved towards `level` as far as the past says a level persists
    (`predict.reversion`)."""
    day = int(round(24.0 / dt))
    period = day if abs(day * dt - 24.0) < 1e-6 else 1  # slots that do not tile a day: no daily cycle
    profile = daily_profile(usable, period, n)
    cap = np.take_along_axis(profile, (n[:, None] - 1 + ahead[None, :]) % profile.shape[1], 1)
    beta, mean = lag_slopes(usable, ahead - lag0, lengths=n)
    return np.clip(cap + beta * (level[:, None] - mean), 0.0, float(n_max))


def restart_slots(usable: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """Restarts a job following `usable` spot pays in each slot (along the last axis): one where spot starts or
    changes level, one where it ends (the job moves back to on-demand GPUs); a spell under way at either end of
    the series none (rows of 2-D `usable` of their own `lengths`: zeros after each, a row's end at its length)."""
    u = np.asarray(usable, dtype=float)
    on = u > 0
    before = np.concatenate([u[..., :1], u[..., :-1]], axis=-1)
    after = np.concatenate([u[..., 1:], u[..., -1:]], axis=-1)
    if lengths is not None:
        lengths = np.asarray(lengths)
        rows = np.flatnonzero(lengths > 0)
        ends = lengths[rows] - 1
        after[rows, ends] = u[rows, ends]
    return (on & (before != u)).astype(float) + (on & (after == 0)).astype(float)


def restart_share(usable: np.ndarray, slot_hours: float, overhead_h: float,
                  lengths: np.ndarray | None = None) -> float | np.ndarray:
    """The share of a spot hour that does work when a job follows spot: 1 - overhead x restarts per spot
    hour in the past `usable` (a restart where usable spot starts or changes level, one where it ends and
    the job goes back to on-demand), floored at 0; per row of a 2-D `usable`. Why: the fluid tail has no restarts,
    so spot that comes in spells of an hour or two looked as good as a steady supply, and a plan deferred work to
    it and finished late (what the discount gained: docs/decisions/chc-restart-discount.md). 1 where the past has
    no spot hours or restarts cost nothing."""
    u = np.asarray(usable, dtype=float)
    rows = np.atleast_2d(u)
    on = (rows > 0).sum(axis=1)
    restarts = restart_slots(rows, lengths).sum(axis=1)  # whole numbers: exact in any order
    share = np.where(on > 0, np.maximum(0.0, 1.0 - overhead_h * restarts / (np.maximum(on, 1) * slot_hours)), 1.0)
    share = share if overhead_h > 0 else np.ones(rows.shape[0])
    return float(share[0]) if u.ndim < 2 else share
