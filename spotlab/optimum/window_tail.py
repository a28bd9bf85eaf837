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


class TailValue:
    """What the work left at the window's end is worth, from the terms' tail (see the module docstring)."""

    def __init__(self, job: Job, terms: WindowTerms, T: int,
                 segments: tuple[tuple[float, float, float], ...] | None = None):
        # the MILP's tail: the block's GPU-hours in the concave envelope's segments (`work_segments`, given by a
        # caller that solves many windows of the job), most work per GPU-hour first (spot before on-demand), at
        # most the envelope's peak per hour. Marginal costs rise within a block, so the cheapest fill over blocks
        # is a fractional knapsack of all the pieces. All blocks at once (one array entry per block), each piece
        # by the same arithmetic as a block-by-block loop
        segments = work_segments(job) if segments is None else segments
        peak = sum(width * slope for width, slope, _ in segments)
        self.unfinished = float(terms.unfinished)
        self.shortfall_price = float(terms.shortfall_price)
        blocks = np.flatnonzero(terms.tail_hours > 0)
        hours = np.asarray(terms.tail_hours, dtype=float)[blocks]
        c_o = np.asarray(terms.tail_od_price, dtype=float)[blocks]
        tiers = [(np.asarray(terms.tail_spot_price, dtype=float)[blocks],
                  np.asarray(terms.tail_spot_gpu_hours, dtype=float)[blocks]),
                 (np.asarray(terms.tail_mixed_price, dtype=float)[blocks],
                  np.asarray(terms.tail_mixed_gpu_hours, dtype=float)[blocks])]
        # the cheaper tier goes first (by price, then hours); spot dearer than on-demand is never bought
        # (on-demand is not scarce): a tier left out offers no GPU-hours
        spot_first = (tiers[0][0] < tiers[1][0]) | ((tiers[0][0] == tiers[1][0]) & (tiers[0][1] <= tiers[1][1]))
        ordered = [tuple(np.where(spot_first, tiers[0][k], tiers[1][k]) for k in (0, 1)),
                   tuple(np.where(spot_first, tiers[1][k], tiers[0][k]) for k in (0, 1))]
        cheap = [(c, np.where((c <= c_o) & (h > 0), np.minimum(h, job.n_max * hours), 0.0)) for c, h in ordered]
        g, room = np.zeros(blocks.size), peak * hours  # GPU-hours placed so far, work the block still allows
        piece_price, piece_work = [], []  # per piece (block-major order below): $ per work unit, work
        for width, slope, _ in segments:
            gpu_hours = width * hours
            top, placed = np.zeros(blocks.size), np.zeros(blocks.size)
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
        price = np.stack(piece_price, axis=1).ravel() if piece_price else np.zeros(0)  # block-major
        amount = np.stack(piece_work, axis=1).ravel() if piece_work else np.zeros(0)
        used = amount > 0
        price, amount = price[used], amount[used]
        upto = np.cumsum(used.reshape(blocks.size, -1).sum(axis=1)) if blocks.size else np.zeros(0, np.int64)
        # block j's curve: the pieces of blocks 0..j, cheapest first (a stable sort of the first upto[j] pieces is
        # the stable order of all of them restricted to those), as cumulative work and cost
        order = np.argsort(price, kind="stable")
        a, p = amount[order], price[order]
        inside = order[None, :] < upto[:, None]  # (J, pieces)
        x_run = np.cumsum(np.where(inside, a, 0.0), axis=1)  # + 0.0 where a piece is not yet in: the same sums
        c_run = np.cumsum(np.where(inside, a * p, 0.0), axis=1)
        J = blocks.size
        self.size = upto + 1
        L = int(self.size.max()) if J else 1
        self.value = np.asarray(terms.value_end, dtype=float)[T + blocks]
        self.x = np.full((J, L), np.inf)  # rows padded: x with +inf (never <= any work), c with its last value
        self.c = np.zeros((J, L))
        self.x[:, 0] = 0.0
        jj, kk = np.nonzero(inside)
        at = np.cumsum(inside, axis=1)[jj, kk]  # the point a piece ends on
        self.x[jj, at], self.c[jj, at] = x_run[jj, kk], c_run[jj, kk]
        last_c = self.c[np.arange(J), self.size - 1]
        self.c = np.where(np.arange(L)[None, :] >= self.size[:, None], last_c[:, None], self.c)
        last = self.x[np.arange(J), self.size - 1]
        self.reach = last * (1 + 1e-12) + 1e-12  # the most work block j's curve covers
        # the whole tail's work and its cost (what work beyond it is priced from)
        self.cap = float(last[-1]) if J else 0.0
        self.cap_cost = float(last_c[-1]) if J else 0.0

    def __call__(self, left: np.ndarray) -> np.ndarray:
        """Objective of the tail for work `left` (> 0) at the window's end, before the window's costs. Work the
        whole tail cannot do is priced at `shortfall_price` (the tail then does all it can, as the MILP's does)."""
        left = np.asarray(left, dtype=float)
        out = np.full(left.shape, self.unfinished)
        if self.shortfall_price > 0:  # (priced above any work's cost, so the tail is filled first)
            out = np.where(left > self.cap, self.unfinished - self.shortfall_price * (left - self.cap) - self.cap_cost,
                           out)
        for j in range(self.value.size):
            fits = left <= self.reach[j]
            if fits.any():
                n = self.size[j]
                out = np.where(fits, np.maximum(out, self.value[j] - np.interp(left, self.x[j, :n], self.c[j, :n])),
                               out)
        return out


class TailStack:
    """The `TailValue`s of a batch's windows as one padded array per field (window, block, point), evaluated for
    many windows in one pass (`at`): the same values as each window's own, to the bit."""

    def __init__(self, tails: Sequence[TailValue]):
        B = len(tails)
        J = max((t.value.size for t in tails), default=0)
        L = max((t.x.shape[1] for t in tails), default=1)
        self.unfinished = np.array([t.unfinished for t in tails], dtype=float)
        self.shortfall_price = np.array([t.shortfall_price for t in tails], dtype=float)
        self.cap = np.array([t.cap for t in tails], dtype=float)
        self.cap_cost = np.array([t.cap_cost for t in tails], dtype=float)
        self.value = np.zeros((B, J))
        self.reach = np.full((B, J), -np.inf)  # a padded block covers no work: never used
        self.size = np.ones((B, J), dtype=np.int64)
        self.x = np.full((B, J, L), np.inf)
        self.c = np.zeros((B, J, L))
        for b, t in enumerate(tails):
            j, n = t.x.shape
            self.value[b, :j], self.reach[b, :j], self.size[b, :j] = t.value, t.reach, t.size
            self.x[b, :j, :n], self.c[b, :j, :n] = t.x, t.c
            self.c[b, :j, n:] = t.c[:, -1:]

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
