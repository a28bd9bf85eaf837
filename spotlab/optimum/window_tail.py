"""What the work left at a window's end is worth to the window DP (`window_dp.py`): the fluid tail's value as a
closed form (`TailValue`), and the same for many windows at once (`TailStack`, for the lockstep DP).

For each tail block j in which the job may finish, the cheapest way to do the work in blocks 0..j is a
fractional knapsack of the blocks' GPU-hours in the concave envelope's segments (the cheaper of expected spot,
mixed and on-demand GPU-hours first, within each block's capacity): a piecewise-linear cost of the work, `x`
(cumulative work) against `c` (cumulative cost). The tail's value is the best of V(end of block j) minus that
cost, or the penalty of not finishing. Each block's curve is kept as rows of padded arrays so that a batch of
windows evaluates all its blocks in one pass; `interp` reproduces `np.interp` to the bit (same branches, same
arithmetic), so the batch and the per-window DP decide alike.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..jobs.job import Job
from .window_types import WindowTerms, work_segments


Segments = tuple[tuple[float, float, float], ...]


class TailValue:
    """What the work left at the window's end is worth, from the terms' tail (see the module docstring)."""

    def __init__(self, job: Job, terms: WindowTerms, T: int, segments: Segments | None = None):
        # `segments`: the job's `work_segments`, given by a caller that solves many windows of the job
        segments = work_segments(job) if segments is None else segments
        self.unfinished = float(terms.unfinished)
        self.shortfall_price = float(terms.shortfall_price)
        blocks = np.flatnonzero(terms.tail_hours > 0)
        fields = [np.asarray(getattr(terms, name), dtype=float)[None, blocks] for name in _TAIL_FIELDS]
        x, c, size = _curves(job, segments, *fields)
        self.x, self.c, self.size = x[0], c[0], size[0]
        self.value = np.asarray(terms.value_end, dtype=float)[T + blocks]
        J = blocks.size
        last = self.x[np.arange(J), self.size - 1]
        self.reach = last * (1 + 1e-12) + 1e-12  # the most work block j's curve covers
        # the whole tail's work and its cost (what work beyond it is priced from)
        self.cap = float(last[-1]) if J else 0.0
        self.cap_cost = float(self.c[-1, -1]) if J else 0.0

    def __call__(self, left: np.ndarray) -> np.ndarray:
        """Objective of the tail for work `left` (> 0) at the window's end, before the window's costs. Work the
        whole tail cannot do is priced at `shortfall_price` (the tail then does all it can, as the MILP's does)."""
        return _value(left, self.unfinished, self.shortfall_price, self.cap, self.cap_cost, self.value, self.reach,
                      self.x, self.c, self.size)


_TAIL_FIELDS = ("tail_hours", "tail_spot_price", "tail_spot_gpu_hours", "tail_mixed_price", "tail_mixed_gpu_hours",
                "tail_od_price")


def _curves(job: Job, segments: Segments, hours: np.ndarray, c_s: np.ndarray, h_s: np.ndarray, c_m: np.ndarray,
            h_m: np.ndarray, c_o: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per window (rows) and tail block (columns; a block of no hours adds nothing): the cheapest fill of blocks
    0..j as points (x: cumulative work, c: cumulative cost, padded with +inf and the last cost) and their count.

    The MILP's tail: the block's GPU-hours in the concave envelope's segments, most work per GPU-hour first (spot
    before on-demand), at most the envelope's peak per hour. Marginal costs rise within a block, so the cheapest
    fill over blocks is a fractional knapsack of all the pieces. Every block of every window at once, each piece by
    the same arithmetic as a block-by-block loop (the test keeps that loop as the reference)."""
    N, J = hours.shape
    peak = sum(width * slope for width, slope, _ in segments)
    # the cheaper tier goes first (by price, then hours); spot dearer than on-demand is never bought (on-demand is
    # not scarce): a tier left out offers no GPU-hours
    spot_first = (c_s < c_m) | ((c_s == c_m) & (h_s <= h_m))
    ordered = [(np.where(spot_first, c_s, c_m), np.where(spot_first, h_s, h_m)),
               (np.where(spot_first, c_m, c_s), np.where(spot_first, h_m, h_s))]
    cheap = [(c, np.where((c <= c_o) & (h > 0), np.minimum(h, job.n_max * hours), 0.0)) for c, h in ordered]
    g, room = np.zeros((N, J)), peak * hours  # GPU-hours placed so far, work the block still allows
    piece_price, piece_work = [], []  # per piece (block-major order below): $ per work unit, work
    for width, slope, _ in segments:
        gpu_hours = width * hours
        top, placed = np.zeros((N, J)), np.zeros((N, J))
        pieces = []  # the segment's GPU-hours [g, g + gpu_hours) split over the tiers, then on-demand
        for c, h in cheap:
            take = np.maximum(0.0, np.minimum(g + gpu_hours, top + h) - np.maximum(g, top))
            pieces.append((take, c))
            placed = placed + take
            top = top + h
        pieces.append((gpu_hours - placed, c_o))
        for piece, price in pieces:
            work = np.minimum(piece * slope, room)
            piece_price.append(price / slope)
            piece_work.append(np.where(work > 0, work, 0.0))
            room = np.where(work > 0, room - work, room)
        g = g + gpu_hours
    per_block = len(piece_price)
    price = np.stack(piece_price, axis=2).reshape(N, J * per_block)  # block-major
    amount = np.stack(piece_work, axis=2).reshape(N, J * per_block)
    used = amount > 0
    upto = np.cumsum(used.reshape(N, J, per_block).sum(axis=2), axis=1)
    # block j's curve: the pieces of blocks 0..j, cheapest first (a stable sort of some pieces is the stable order
    # of all of them restricted to those), as cumulative work and cost; a piece that does no work is left out
    order = np.argsort(price, axis=1, kind="stable")
    a, p = np.take_along_axis(amount, order, 1), np.take_along_axis(price, order, 1)
    rank = np.cumsum(used, axis=1) - 1  # a used piece's index among its row's used pieces
    ranked = np.take_along_axis(np.where(used, rank, np.iinfo(np.int64).max), order, 1)
    inside = ranked[:, None, :] < upto[:, :, None]  # (N, J, pieces)
    x_run = np.cumsum(np.where(inside, a[:, None, :], 0.0), axis=2)  # + 0.0 where a piece is not in: the same sums
    c_run = np.cumsum(np.where(inside, (a * p)[:, None, :], 0.0), axis=2)
    size = upto + 1
    L = int(size.max()) if size.size else 1
    x, c = np.full((N, J, L), np.inf), np.zeros((N, J, L))
    x[:, :, 0] = 0.0
    nn, jj, kk = np.nonzero(inside)
    at = np.cumsum(inside, axis=2)[nn, jj, kk]  # the point a piece ends on
    x[nn, jj, at], c[nn, jj, at] = x_run[nn, jj, kk], c_run[nn, jj, kk]
    last_c = np.take_along_axis(c, (size - 1)[:, :, None], 2)
    c = np.where(np.arange(L) >= size[:, :, None], last_c, c)
    return x, c, size


def _value(left: np.ndarray, unfinished: float, shortfall_price: float, cap: float, cap_cost: float,
           value: np.ndarray, reach: np.ndarray, x: np.ndarray, c: np.ndarray, size: np.ndarray) -> np.ndarray:
    """`TailValue.__call__` from its fields (one window's blocks), by `np.interp` per block."""
    left = np.asarray(left, dtype=float)
    out = np.full(left.shape, unfinished)
    if shortfall_price > 0:  # (priced above any work's cost, so the tail is filled first)
        out = np.where(left > cap, unfinished - shortfall_price * (left - cap) - cap_cost, out)
    if not left.size:
        return out
    low, high = left.min(), left.max()
    if np.isnan(low):  # (a NaN fits nowhere: block by block)
        low, high = -np.inf, np.inf
    # only the blocks some of `left` fits in, in order; where all of it fits, no mask (the same values)
    for j in np.flatnonzero(reach >= low):
        n = size[j]
        got = np.maximum(out, value[j] - np.interp(left, x[j, :n], c[j, :n]))
        out = got if reach[j] >= high else np.where(left <= reach[j], got, out)
    return out


class TailStack:
    """The tail values of a batch's windows (each window's `TailValue`) as one padded array per field (window,
    block, point), built for all windows at once and evaluated for many in one pass (`at`), or for one (`one`):
    the same values as each window's own `TailValue`, to the bit."""

    def __init__(self, job: Job, terms: Sequence[WindowTerms], T: int, segments: Segments | None = None):
        segments = work_segments(job) if segments is None else segments
        B = len(terms)
        self.unfinished = np.array([tm.unfinished for tm in terms], dtype=float)
        self.shortfall_price = np.array([tm.shortfall_price for tm in terms], dtype=float)
        J = max((np.size(tm.tail_hours) for tm in terms), default=0)
        fields = [_padded([getattr(tm, name) for tm in terms], J) for name in _TAIL_FIELDS]  # no hours past the end
        self.x, self.c, self.size = _curves(job, segments, *fields)
        live = fields[0] > 0  # blocks of no hours are not a place to finish in (`TailValue` leaves them out)
        self.value = _padded([np.asarray(tm.value_end, dtype=float)[T:] for tm in terms], J)
        last = np.take_along_axis(self.x, (self.size - 1)[:, :, None], 2)[:, :, 0]
        self.reach = np.where(live, last * (1 + 1e-12) + 1e-12, -np.inf)
        self.cap, self.cap_cost = np.zeros(B), np.zeros(B)  # the work and cost of each window's last block's curve
        if J:
            final = J - 1 - np.argmax(live[:, ::-1], axis=1)
            rows, some = np.arange(B), live.any(axis=1)
            self.cap = np.where(some, last[rows, final], 0.0)
            self.cap_cost = np.where(some, self.c[rows, final, -1], 0.0)
        self.live = live

    def one(self, b: int, left: np.ndarray) -> np.ndarray:
        """Window b's tail value of `left` (any shape), as its `TailValue`."""
        live = self.live[b]
        return _value(left, float(self.unfinished[b]), float(self.shortfall_price[b]), float(self.cap[b]),
                      float(self.cap_cost[b]), self.value[b, live], self.reach[b, live], self.x[b, live],
                      self.c[b, live], self.size[b, live])

    def at(self, rows: np.ndarray, left: np.ndarray) -> np.ndarray:
        """`tails[rows[r]](left[r])` for every r (`left`: (N, M) work left, > 0)."""
        left = np.asarray(left, dtype=float)
        rows = np.asarray(rows, dtype=np.int64)
        col = (slice(None), None)
        unfinished, short = self.unfinished[rows][col], self.shortfall_price[rows][col]
        out = np.broadcast_to(unfinished, left.shape)
        cap = self.cap[rows][col]
        out = np.where((short > 0) & (left > cap), unfinished - short * (left - cap) - self.cap_cost[rows][col], out)
        if self.value.shape[1]:
            lf = left[:, :, None]  # (N, M, 1) against the blocks (N, 1, J)
            got = interp(lf, self.x[rows][:, None], self.c[rows][:, None], self.size[rows][:, None])
            fits = lf <= self.reach[rows][:, None]
            cand = np.where(fits, self.value[rows][:, None] - got, -np.inf)
            out = np.maximum(out, cand.max(axis=2))
        return out


def _padded(rows: Sequence, width: int) -> np.ndarray:
    """Rows of floats as one (rows, width) array, zeros after each row's end."""
    out = np.zeros((len(rows), width))
    for r, row in enumerate(rows):
        row = np.asarray(row, dtype=float)
        out[r, :row.size] = row
    return out


def interp(x: np.ndarray, xp: np.ndarray, fp: np.ndarray, n: np.ndarray) -> np.ndarray:
    """`np.interp(x, xp[..., :n], fp[..., :n])` over broadcast leading axes: rows of increasing points padded
    with +inf past their `n` (>= 1), evaluated by the same branches and arithmetic as numpy's (a point before the
    first gives fp[0], on or past the last fp[n-1], on a point its value, else slope x (x - xp[j]) + fp[j], with
    numpy's fallback where that is not a number), so a result equals numpy's to the bit."""
    j = (xp <= x[..., None]).sum(axis=-1) - 1  # the last point at or before x (numpy's binary search)
    top = xp.shape[-1] - 1
    lo = np.clip(j, 0, top)[..., None]
    hi = np.clip(j + 1, 0, top)[..., None]
    x0, x1 = np.take_along_axis(xp, lo, -1)[..., 0], np.take_along_axis(xp, hi, -1)[..., 0]
    f0, f1 = np.take_along_axis(fp, lo, -1)[..., 0], np.take_along_axis(fp, hi, -1)[..., 0]
    first = fp[..., 0]
    last = np.take_along_axis(fp, (n - 1)[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slope = (f1 - f0) / (x1 - x0)
        y = slope * (x - x0) + f0
        back = slope * (x - x1) + f1
    y = np.where(np.isnan(y), np.where(np.isnan(back) & (f0 == f1), f0, back), y)
    y = np.where(x0 == x, f0, y)
    y = np.where(j >= n - 1, last, y)
    return np.where(j < 0, first, y)
