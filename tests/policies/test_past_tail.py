"""CHC's tail from the past for all windows at once (`spotlab.policies.past_tail.past_tails`) against one window
at a time (the per-window computation, kept here as the reference): the same tails to the bit, on random jobs
(N_min above 1: the mixed tier), random pasts (gaps, droughts, flicker, prices missing, shorter than two days,
windows of different lengths in one call) and slot lengths that do and do not tile a day; and the past's
daily profile and lag slopes (`predict.reversion`), row by row, against the one-series formulas."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.jobs.job import Job, Throughput
from spotlab.optimum.window_types import TailForecast
from spotlab.policies.past_tail import past_tails, restart_share


def daily_profile(y: np.ndarray, period: int) -> np.ndarray:
    """The time-of-day mean of one series, by bincount (the reference for `reversion.daily_profile`)."""
    if period >= 2 and y.size >= 2 * period:
        idx = np.arange(y.size) % period
        return np.bincount(idx, weights=y, minlength=period) / np.maximum(np.bincount(idx, minlength=period), 1)
    return np.full(max(period, 1), float(y.mean()))


def lag_slopes(y: np.ndarray, lags: np.ndarray, min_pairs: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """The lag-h slopes of one series (the reference for `reversion.lag_slopes`)."""
    lags = np.asarray(lags, dtype=np.int64)
    n = y.size
    if n <= min_pairs or lags.size == 0:
        return np.zeros(lags.size), np.zeros(lags.size)
    h = np.clip(lags, 0, n - 1)
    pairs = n - h
    cx, cxx = np.concatenate([[0.0], np.cumsum(y)]), np.concatenate([[0.0], np.cumsum(y * y)])
    sx, sxx, sy = cx[pairs], cxx[pairs], cx[n] - cx[h]
    sxy = np.correlate(y, y, mode="full")[n - 1 + h]
    c = np.maximum(pairs, 1).astype(float)
    var = sxx / c - (sx / c) ** 2
    cov = sxy / c - sx * sy / c ** 2
    use = (pairs >= min_pairs) & (var > 1e-9) & (lags >= 1)
    return np.where(use, np.clip(cov / np.where(use, var, 1.0), 0.0, 1.0), 0.0), np.where(use, sx / c, 0.0)


def reference_tail(job: Job, a: np.ndarray, p: np.ndarray, bounds: np.ndarray, k: np.ndarray, lag0: int,
                   dt: float, seen: float, od: float) -> TailForecast:
    """One window's tail from its past, as CHC computed it window by window."""
    first = int(math.floor(bounds[0] / dt + 1e-9))
    last = int(math.ceil(bounds[-1] / dt - 1e-9))
    ok = np.isfinite(a)
    a, p = np.where(ok, a, 0.0), np.where(np.isfinite(p), p, np.nan)
    pure = np.where(a >= job.n_min, np.minimum(a, job.n_max), 0.0)
    mixed = np.where((a > 0) & (a < job.n_min), float(job.n_min), 0.0)
    edges = np.arange(first, last + 1) * dt

    def per_block(cap):
        cum = np.concatenate([[0.0], np.cumsum(cap * dt)])
        return np.maximum(np.diff(np.interp(bounds, edges, cum)), 0.0)

    def profile(usable, level):
        day = int(round(24.0 / dt))
        period = day if abs(day * dt - 24.0) < 1e-6 else 1
        prof = daily_profile(usable, period)
        cap = prof[(usable.size - 1 + k) % prof.size]
        beta, mean = lag_slopes(usable, k - lag0)
        return np.clip(cap + beta * (level - mean), 0.0, float(job.n_max))

    cap_pure = profile(pure, min(seen, float(job.n_max)) if seen >= job.n_min else 0.0)
    cap_mixed = profile(mixed, float(job.n_min) if 0 < seen < job.n_min else 0.0) \
        if mixed.any() or 0 < seen < job.n_min else np.zeros(k.size)
    ok_p = np.isfinite(p)
    good = (pure > 0) & ok_p
    spot_price = float(np.mean(p[good])) if good.any() else od
    blend = (mixed > 0) & ok_p
    mixed_price = float(np.mean((a[blend] * p[blend] + (job.n_min - a[blend]) * od) / job.n_min)) \
        if blend.any() else od
    useful = restart_share(np.where(a > 0, np.minimum(a, job.n_max), 0.0), dt, job.overhead_h)
    raw, raw_mixed = per_block(cap_pure), per_block(cap_mixed)
    n = bounds.size - 1
    on = pure > 0
    level = float(pure[on].mean()) if on.any() else float(job.n_max)
    stalled = (1.0 - useful) * (raw / level + raw_mixed / float(job.n_min))

    def price(c):
        return np.full(n, c / useful if useful > 0 else od)

    return TailForecast(hours=np.diff(bounds), spot_gpu_hours=raw * useful, spot_price=price(spot_price),
                        od_price=np.full(n, od), stalled_hours=stalled, mixed_gpu_hours=raw_mixed * useful,
                        mixed_price=price(mixed_price))


def _past(rng: np.random.Generator, n: int, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    kind = rng.integers(0, 5)
    if kind == 0:  # spells
        a = np.repeat(rng.integers(0, n_max + 3, n // 5 + 1), 5)[:n].astype(float)
    elif kind == 1:  # flicker
        a = np.tile([float(n_max), 0.0], n)[:n]
    elif kind == 2:  # a drought
        a = np.zeros(n)
    elif kind == 3:
        a = rng.integers(0, n_max + 2, n).astype(float)
    else:  # fractional counts (an averaged trace): sums that depend on their order
        a = rng.uniform(0, n_max + 1, n) * (rng.random(n) < 0.7)
    a[rng.random(n) < 0.03] = np.nan
    p = rng.uniform(0.2, 3.0, n)
    p[rng.random(n) < 0.05] = np.nan
    return a, p


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_all_windows_at_once_give_each_windows_own_tail(seed):
    rng = np.random.default_rng(seed)
    n_max = int(rng.integers(1, 9))
    n_min = int(rng.integers(1, n_max + 1))
    job = Job(work=n_max * 20.0, deadline_h=40.0, hard_deadline_h=50.0, n_min=n_min, n_max=n_max,
              throughput=Throughput(1.0, 0.2), value=500.0, overhead_h=float(rng.choice([0.0, 0.1, 0.5])))
    dt = float(rng.choice([1.0, 1 / 6, 0.7]))  # 0.7 h does not tile a day
    t, w = int(rng.integers(0, 20)), int(rng.integers(1, 13))
    start = (t + w) * dt
    bounds = np.concatenate([[start], np.sort(rng.uniform(start + dt, start + 40 * dt, int(rng.integers(1, 6))))])
    first = int(math.floor(bounds[0] / dt + 1e-9))
    last = int(math.ceil(bounds[-1] / dt - 1e-9))
    k = np.arange(first, last) - t
    day = int(round(24 / dt))
    lengths = rng.choice([day * 7, day * 2 + 3, day + 5, 30, 20], size=int(rng.integers(1, 6)))
    pasts = [_past(rng, int(n), n_max) for n in lengths]
    seen = rng.integers(0, n_max + 2, lengths.size).astype(float)
    od = rng.uniform(2.0, 4.0, lengths.size)
    got = past_tails(job, [a for a, _ in pasts], [p for _, p in pasts], bounds, k, w - 1, dt, seen, od)
    for r, (a, p) in enumerate(pasts):
        want = reference_tail(job, a, p, bounds, k, w - 1, dt, float(seen[r]), float(od[r]))
        for field in ("hours", "spot_gpu_hours", "spot_price", "od_price", "stalled_hours", "mixed_gpu_hours",
                      "mixed_price"):
            assert np.array_equal(getattr(got[r], field), getattr(want, field), equal_nan=True), (r, field)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_profiles_and_slopes_of_rows_are_each_series_own(seed):
    from spotlab.predict import reversion

    rng = np.random.default_rng(seed)
    n, period = int(rng.integers(5, 400)), int(rng.choice([1, 6, 24, 37]))
    y = rng.uniform(0, 9, (int(rng.integers(1, 5)), n)) * (rng.random((1, n)) < 0.8)
    lags = rng.integers(-2, n + 3, int(rng.integers(0, 30)))
    profiles = reversion.daily_profile(y, period)
    beta, mean = reversion.lag_slopes(y, lags)
    for r, row in enumerate(y):
        assert np.array_equal(profiles[r], daily_profile(row, period))
        assert np.array_equal(reversion.daily_profile(row, period), daily_profile(row, period))
        b, m = lag_slopes(row, lags)
        assert np.array_equal(beta[r], b) and np.array_equal(mean[r], m)
        b1, m1 = reversion.lag_slopes(row, lags)
        assert np.array_equal(b1, b) and np.array_equal(m1, m)
