"""The tail's value at a window's end (`spotlab.optimum.window_tail`): its curves equal those of the block-by-block
knapsack (kept here as the reference) to the bit, the batch evaluation equals each window's own to the bit, and
its interpolation equals numpy's to the bit, on random windows and random curves (knots, points on them, before
and past them, tiny pieces)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import SolverError
from spotlab.optimum.window_tail import TailStack, TailValue, interp
from spotlab.optimum.window_types import work_segments

from .test_window_dp import random_window


def reference_curves(job, terms, T) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """Per tail block: (V at its end, cumulative work, cumulative cost) of the cheapest fill of blocks 0..j, one
    block, segment and piece at a time."""
    segments = work_segments(job)
    peak = sum(width * slope for width, slope, _ in segments)
    out, prices, amounts = [], [], []
    for j in np.flatnonzero(terms.tail_hours > 0):
        hours = float(terms.tail_hours[j])
        c_s, c_o = float(terms.tail_spot_price[j]), float(terms.tail_od_price[j])
        c_m = float(terms.tail_mixed_price[j])
        tiers = sorted(((c_s, float(terms.tail_spot_gpu_hours[j])), (c_m, float(terms.tail_mixed_gpu_hours[j]))))
        cheap = [(c, min(h, job.n_max * hours)) for c, h in tiers if c <= c_o and h > 0]
        g, room = 0.0, peak * hours
        for width, slope, _ in segments:
            gpu_hours = width * hours
            pieces, top = [], 0.0
            for c, h in cheap:
                take = max(0.0, min(g + gpu_hours, top + h) - max(g, top))
                pieces.append((take, c))
                top += h
            pieces.append((gpu_hours - sum(a for a, _ in pieces), c_o))
            for piece, price in pieces:
                work = min(piece * slope, room)
                if work > 0:
                    prices.append(price / slope)
                    amounts.append(work)
                    room -= work
            g += gpu_hours
        p, a = np.array(prices), np.array(amounts)
        order = np.argsort(p, kind="stable")
        p, a = p[order], a[order]
        out.append((float(terms.value_end[T + j]), np.concatenate([[0.0], np.cumsum(a)]),
                    np.concatenate([[0.0], np.cumsum(a * p)])))
    return out


def random_terms(seed: int, n: int) -> tuple:
    """A random job and window length, and the terms of up to n of its windows."""
    job, wp, *_ = random_window(seed)
    terms = []
    for k in range(n):
        _, wk, state, a, sp, od, tail, common = random_window(seed + 1 + k, same_job=job, same_w=wp.w)
        try:
            terms.append(wk.terms(state, a, sp, od, tail, common["slots_left"], common["urgency"],
                                  common["must_finish"], common["net"]))
        except SolverError:
            continue
    return job, wp.w, terms


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_the_curves_are_the_block_by_block_knapsacks(seed):
    job, w, terms = random_terms(seed, 3)
    for tm in terms:
        got, want = TailValue(job, tm, w), reference_curves(job, tm, w)
        assert got.value.size == len(want)
        for j, (value, x, c) in enumerate(want):
            n = int(got.size[j])
            assert got.value[j] == value and n == x.size
            assert np.array_equal(got.x[j, :n], x) and np.array_equal(got.c[j, :n], c)
            assert np.all(np.isinf(got.x[j, n:])) and np.all(got.c[j, n:] == c[-1])


def _curve(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = int(rng.integers(1, 9))
    steps = rng.choice([1e-18, 1e-9, 0.5, 3.0], size=n - 1) * rng.uniform(0.5, 1.5, n - 1)
    x = np.concatenate([[0.0], np.cumsum(steps)])
    c = np.concatenate([[0.0], np.cumsum(steps * rng.uniform(0.1, 5.0, n - 1))])
    return x, c


@settings(max_examples=200, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_interp_is_numpys_to_the_bit(seed):
    rng = np.random.default_rng(seed)
    curves = [_curve(rng) for _ in range(int(rng.integers(1, 5)))]
    L = max(x.size for x, _ in curves)
    xp, fp = np.full((len(curves), L), np.inf), np.zeros((len(curves), L))
    for j, (x, c) in enumerate(curves):
        xp[j, :x.size], fp[j, :x.size], fp[j, x.size:] = x, c, c[-1]
    n = np.array([x.size for x, _ in curves])
    knots = np.concatenate([x for x, _ in curves])
    q = np.concatenate([knots, knots * (1 + 1e-15), rng.uniform(-1, 1.2, 8) * max(1.0, knots.max()), [0.0, -0.0]])
    got = interp(q[:, None], xp[None], fp[None], n[None])  # (queries, curves)
    for j, (x, c) in enumerate(curves):
        want = np.interp(q, x, c)
        assert np.array_equal(got[:, j].view(np.int64), want.view(np.int64)), (j, got[:, j], want)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 5))
def test_a_stack_of_tails_values_each_window_as_its_own(seed, n):
    """`TailStack` of a batch's terms (every window's blocks at once, blocks of no hours included) against each
    window's `TailValue`, to the bit."""
    job, w, terms = random_terms(seed, n)
    tails = [TailValue(job, tm, w) for tm in terms]
    spans = [float(tm.remaining) for tm in terms]
    if not tails:
        return
    rng = np.random.default_rng(seed)
    stack = TailStack(job, terms, w)
    rows = rng.integers(0, len(tails), 7)
    left = np.array([rng.uniform(1e-9, 1.5, 3) * spans[r] for r in rows])
    for r in rows:  # the exact knots of each curve, and past the whole tail's work
        knots = tails[r].x[np.isfinite(tails[r].x)]
        left = np.vstack([left, np.resize(np.concatenate([knots[knots > 0], [tails[r].cap * 2 + 1]]), 3)])
    rows = np.concatenate([rows, rows])
    got = stack.at(rows, left)
    for i, r in enumerate(rows):
        want = tails[r](left[i])
        assert np.array_equal(got[i], want), (got[i], want)
        assert np.array_equal(stack.one(int(r), left[i]), want)
    for r, tail in enumerate(tails):  # a window's own fields, and its value on a whole grid of work left
        live = stack.live[r]
        assert np.array_equal(stack.value[r, live], tail.value) and np.array_equal(stack.reach[r, live], tail.reach)
        assert stack.cap[r] == tail.cap and stack.cap_cost[r] == tail.cap_cost
        grid = np.linspace(1e-9, 1.5 * spans[r], 200)
        assert np.array_equal(stack.one(r, grid), tail(grid))


def block_by_block(left, unfinished, shortfall_price, cap, cap_cost, value, reach, x, c, size):
    """The tail's value one block at a time, every block tried (the reference for `_value`)."""
    out = np.full(left.shape, unfinished)
    if shortfall_price > 0:
        out = np.where(left > cap, unfinished - shortfall_price * (left - cap) - cap_cost, out)
    for j in range(value.size):
        fits = left <= reach[j]
        n = size[j]
        out = np.where(fits, np.maximum(out, value[j] - np.interp(left, x[j, :n], c[j, :n])), out)
    return out


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 4))
def test_the_tail_value_reads_only_the_blocks_the_work_fits_in_and_equals_every_block_tried(seed, n):
    """The tail's value (`TailValue`, `TailStack.one`) skips the blocks no work left fits in and masks none where
    all of it fits: the same values, to the bit, as trying every block, on work left below, among and past the
    blocks' reach (a NaN included)."""
    job, w, terms = random_terms(seed, n)
    rng = np.random.default_rng(seed)
    for tm in terms:
        tail = TailValue(job, tm, w)
        fields = (tail.unfinished, tail.shortfall_price, tail.cap, tail.cap_cost, tail.value, tail.reach, tail.x,
                  tail.c, tail.size)
        top = max(float(tail.reach.max()) if tail.reach.size else 1.0, 1e-6)
        cases = [rng.uniform(1e-9, 1.5, 7) * top, rng.uniform(1e-9, 0.2, 3) * top, np.array([top * 3, top * 4]),
                 np.concatenate([tail.reach, tail.reach * (1 + 1e-12)]), np.array([0.5 * top, np.nan]),
                 rng.uniform(1e-9, 1.2, (2, 5)) * top]
        for left in cases:
            got, want = tail(left), block_by_block(left, *fields)
            assert np.array_equal(got, want, equal_nan=True), (left, got, want)
