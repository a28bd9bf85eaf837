"""Reversion: the time-of-day mean, moved towards the last value as far as the past says a level lasts.

Spot availability comes in spells of very different lengths: a zone that drops for an hour usually comes
back, a drought of a day usually goes on. Persistence carries every level to every horizon, so a one-hour
dip becomes a twelve-hour forecast of no spot; the time-of-day mean forgets a drought that is under way. The
direct linear forecast per horizon sits between them: y[t+h] = profile(t+h) + b_h (y[t] - m_h), with b_h
the least-squares slope of y[e+h] on y[e] over the history (`lag_slopes`, clipped to [0, 1]: a level lasts or
fades, it does not reverse) and m_h the mean of those y[e]. Where b_h is 1 it is persistence plus the daily
cycle, where it is 0 the profile. It is also how CHC's tail after its window reads the past
(`spotlab.policies.chc`), so a plan on these forecasts sees one consistent picture from slot 1 to the end.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from ..params import Interval, positive_hours
from .base import Predictor, slots_per


def lag_slopes(y: np.ndarray, lags: np.ndarray, min_pairs: int = 24,
               lengths: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per lag h, the least-squares slope of y[e + h] on y[e] over every such pair in `y`, clipped to [0, 1],
    and the mean of those y[e]; both 0 where fewer than `min_pairs` pairs or no variation are known. A 2-D `y`
    gives them per row (last axis: time); `lengths`: each row's own length, its values first and zeros after."""
    beta, mean, _ = lag_stats(y, lags, min_pairs, lengths)
    return beta, mean


def lag_stats(y: np.ndarray, lags: np.ndarray, min_pairs: int = 24,
              lengths: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`lag_slopes` and, per lag, whether its slope is known (per row of a 2-D `y`: CHC's tail reads every
    window's past at once; the lag-h products are summed row by row by numpy's correlate, so a row's numbers are
    those of the row alone). Rows of their own `lengths` (zeros after them) give the numbers of each row cut to
    its length: running sums from a row's start and its own pairs."""
    lags = np.asarray(lags, dtype=np.int64)
    y = np.asarray(y, dtype=float)
    rows = y.reshape(-1, y.shape[-1])
    G, N = rows.shape
    n = np.full(G, N, dtype=np.int64) if lengths is None else np.asarray(lengths, dtype=np.int64).reshape(G)
    enough = n > min_pairs
    if not enough.any() or lags.size == 0:
        zero = np.zeros((G, lags.size))
        out = zero, zero.copy(), np.zeros((G, lags.size), dtype=bool)
    else:
        h = np.clip(lags[None, :], 0, np.maximum(n - 1, 0)[:, None])  # (G, lags)
        pairs = n[:, None] - h  # pairs (y[e], y[e + h]) for e = 0 .. n-1-h
        start = np.zeros((G, 1))
        cx = np.concatenate([start, np.cumsum(rows, axis=1)], axis=1)
        cxx = np.concatenate([start, np.cumsum(rows * rows, axis=1)], axis=1)
        sx, sxx = np.take_along_axis(cx, pairs, 1), np.take_along_axis(cxx, pairs, 1)
        sy = np.take_along_axis(cx, n[:, None], 1) - np.take_along_axis(cx, h, 1)
        sxy = lag_products(rows, h, n)
        c = np.maximum(pairs, 1).astype(float)
        var = sxx / c - (sx / c) ** 2
        cov = sxy / c - sx * sy / c ** 2
        use = (pairs >= min_pairs) & (var > 1e-9) & (lags >= 1) & enough[:, None]
        beta = np.where(use, np.clip(cov / np.where(use, var, 1.0), 0.0, 1.0), 0.0)
        out = beta, np.where(use, sx / c, 0.0), use
    return tuple(o[0] if y.ndim == 1 else o.reshape(y.shape[:-1] + (lags.size,)) for o in out)


# whole-number rows whose squares sum to at most this have exact lag products by FFT: every sum is an integer far
# below 2**53, and the transform's rounding error (about 1e-16 x log2(length) x the sum of squares) far below 0.5
_EXACT_FFT_SUM = 2.0 ** 30
# rows at least this long take the FFT (shorter ones: the direct sums are cheaper; both give the same numbers)
_FFT_FROM = 400


def lag_products(rows: np.ndarray, lags: np.ndarray, lengths: np.ndarray | None = None) -> np.ndarray:
    """Per row of `rows` (G, n) and lag h of `lags` (each in 0..n-1; (G, lags): each row's own), the sum of
    rows[e] * rows[e + h].

    Long rows of whole numbers (availability: GPU counts, tiers of them) take one FFT for all rows and lags,
    rounded to the integers the sums are: the same numbers as summing the products, in any order. Other rows are
    summed row by row by numpy's correlate, so a row's numbers never depend on the rows beside it; a row of
    `lengths` (zeros after it) is summed cut to its length. docs/benchmarks.md"""
    G, N = rows.shape
    lags = np.asarray(lags, dtype=np.int64)
    per_row = np.broadcast_to(lags, (G, lags.shape[-1]))
    if G and N >= _FFT_FROM and _exact_by_fft(rows):
        from scipy import fft

        size = fft.next_fast_len(2 * N - 1, real=True)
        spectrum = fft.rfft(rows, size, axis=1)
        auto = fft.irfft(spectrum * spectrum.conj(), size, axis=1)
        return np.rint(np.take_along_axis(auto, per_row, 1)) + 0.0  # + 0.0: a sum of 0 is +0.0, as summed
    n = np.full(G, N) if lengths is None else np.asarray(lengths).reshape(G)
    out = np.empty((G, per_row.shape[1]))
    for r in range(G):
        row = rows[r, :n[r]]
        out[r] = np.correlate(row, row, mode="full")[n[r] - 1 + per_row[r]]
    return out


def _exact_by_fft(rows: np.ndarray) -> bool:
    """Whether the FFT's lag products of `rows`, rounded, are exactly the summed ones (`_EXACT_FFT_SUM`)."""
    return np.array_equal(rows, np.rint(rows)) and float(np.max(np.sum(rows * rows, axis=1))) <= _EXACT_FFT_SUM


def daily_profile(y: np.ndarray, period: int, lengths: np.ndarray | None = None) -> np.ndarray:
    """Mean of `y` at each phase of the period (phase = index mod period) when two periods or more are
    known, else the overall mean at every phase; per row of a 2-D `y` (last axis: time; `lengths`: each row's
    own, zeros after it). Each phase's values are summed in time order, one period after another, so a row's
    profile is that of the row alone."""
    y = np.asarray(y, dtype=float)
    rows = y.reshape(-1, y.shape[-1])
    G, N = rows.shape
    n = np.full(G, N, dtype=np.int64) if lengths is None else np.asarray(lengths, dtype=np.int64).reshape(G)
    out = np.empty((G, max(period, 1)))
    cycle = (n >= 2 * period) & (period >= 2)
    if cycle.any():
        whole = -(-N // period) * period
        padded = np.zeros((int(cycle.sum()), whole))
        padded[:, :N] = rows[cycle]  # + 0.0 after each row: the same sums
        sums = np.zeros((padded.shape[0], period))
        for block in padded.reshape(padded.shape[0], whole // period, period).transpose(1, 0, 2):
            sums = sums + block
        m = n[cycle][:, None]
        out[cycle] = sums / np.maximum(m // period + (np.arange(period)[None, :] < m % period), 1)
    for r in np.flatnonzero(~cycle):
        out[r] = float(rows[r, :n[r]].mean())
    return out[0] if y.ndim == 1 else out.reshape(y.shape[:-1] + (out.shape[1],))


class Reversion(Predictor):
    """y[t+h] = profile(t+h) + b_h (y[t] - m_h), from the history's lag-h slopes; persistence where a slope is
    not known (fewer than `min_pairs` pairs)."""

    name = "reversion"

    def __init__(self, period_hours: float = 24.0, min_pairs: int = 24) -> None:
        self.period_hours = period_hours
        self.min_pairs = min_pairs

    _parameter_constraints = {"period_hours": [positive_hours], "min_pairs": [Interval(Integral, 2, None)]}

    def min_history(self, slot_hours: float = 1.0) -> int:
        return int(self.min_pairs) + 1

    def _fit(self, y: np.ndarray) -> None:
        self.period_ = slots_per(self.period_hours, self.slot_hours_)
        self.profile_ = daily_profile(y, self.period_)
        self.fitted_n_ = y.size  # the profile's phases count from the first slot of this history
        self.lo_, self.hi_ = float(y.min()), float(y.max())
        self.slopes_: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def _slopes(self, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if w not in self.slopes_:
            lags = np.arange(1, w + 1)
            self.slopes_[w] = lag_stats(self.y_[:self.fitted_n_], lags, int(self.min_pairs))
        return self.slopes_[w]

    def _at(self, origin: np.ndarray, h: int | np.ndarray, beta: np.ndarray | float, mean: np.ndarray | float,
            known: np.ndarray | bool) -> np.ndarray:
        """Forecasts made at slots `origin` for `h` slots ahead (persistence where the slope is not known)."""
        last = self.y_[origin]
        prof = self.profile_[(origin + h) % self.profile_.size]
        return np.clip(np.where(known, prof + beta * (last - mean), last), self.lo_, self.hi_)

    def _predict(self, w: int) -> np.ndarray:
        h = np.arange(1, w + 1)
        return self._at(np.full(w, self.y_.size - 1), h, *self._slopes(w))

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        beta, mean, known = self._slopes(w)
        y = self.y_[:self.fitted_n_]
        out = []
        for i, h in enumerate(range(1, w + 1)):
            e = np.arange(max(0, y.size - h))
            out.append(y[e + h] - self._at(e, h, beta[i], mean[i], known[i]))
        return out
