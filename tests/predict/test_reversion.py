"""The reversion model: the time-of-day mean moved towards the last value by the history's lag slopes.

- Known answers: a short dip is forecast to end, a long drought to last; the forecast equals its formula.
- Property: the forecast lies between the last value and the profile (slopes in [0, 1]) and within the
  history's range; the lag products are, to the bit, the sums numpy's correlate makes row by row, whichever way
  they are computed (long rows of whole numbers by FFT, others summed); rows of their own lengths (zeros after
  them) give, to the bit, the profile, slopes and products of each row cut to its length.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.predict.registry import make_predictor
from spotlab.predict.reversion import _FFT_FROM, daily_profile, lag_products, lag_slopes, lag_stats


def test_a_short_dip_ends_and_a_long_drought_lasts():
    """Hourly availability of 8 GPUs with one-hour dips to 1 every 6 h: after a dip the forecast is back near 8 an
    hour later (persistence would say 1 for every hour). With three-day droughts instead, the forecast made at the
    start of one stays near 0 for the next hours."""
    dips = np.where(np.arange(24 * 10) % 6 == 5, 1.0, 8.0)
    m = make_predictor("reversion").fit(dips[:24 * 9 + 6])  # ends on a dip
    assert m.y_[-1] == 1.0
    f = m.predict(12)
    assert f[0] > 7.0 and np.all(f >= 1.0)
    droughts = np.where((np.arange(24 * 12) // 72) % 2 == 0, 8.0, 0.0)  # three days with spot, three without
    m = make_predictor("reversion").fit(droughts[:24 * 9 + 2])  # two hours into a drought
    assert m.y_[-1] == 0.0
    assert np.all(m.predict(6) < 1.0)


def test_the_forecast_is_the_profile_moved_by_the_lag_slope():
    rng = np.random.default_rng(3)
    y = np.repeat(rng.integers(0, 9, 60), 5)[:250].astype(float)
    m = make_predictor("reversion").fit(y)
    w = 10
    beta, mean = lag_slopes(y, np.arange(1, w + 1))
    prof = daily_profile(y, 24)
    want = np.clip(prof[(y.size - 1 + np.arange(1, w + 1)) % 24] + beta * (y[-1] - mean), y.min(), y.max())
    np.testing.assert_allclose(m.predict(w), want)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), run=st.integers(1, 12), w=st.integers(1, 30))
def test_between_the_last_value_and_the_profile_and_within_the_range(seed, run, w):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 400))
    y = np.repeat(rng.integers(0, 9, n // run + 1), run)[:n].astype(float)
    origin = int(rng.integers(25, n))
    m = make_predictor("reversion").fit(y[:origin])
    f = m.predict(w)
    prof = daily_profile(y[:origin], 24)[(origin - 1 + np.arange(1, w + 1)) % (24 if origin >= 48 else 1)]
    last = y[origin - 1]
    lo, hi = np.minimum(prof, last), np.maximum(prof, last)
    beta, mean, known = lag_stats(y[:origin], np.arange(1, w + 1))
    # with the lag's own mean in place of the profile's level the forecast is a convex combination; allow
    # for the difference between the two means
    slack = np.abs(mean - prof) * beta + 1e-9
    assert np.all((f >= lo - slack) | ~known) and np.all((f <= hi + slack) | ~known)
    assert np.all(f >= y[:origin].min() - 1e-9) and np.all(f <= y[:origin].max() + 1e-9)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), rows=st.integers(1, 12), kind=st.sampled_from(["0/1", "counts", "signed",
                                                                                      "fractional", "huge"]))
def test_lag_products_are_the_summed_products_to_the_bit(seed, rows, kind):
    """Rows short and long (either side of the FFT's threshold), sparse and dense, of GPU counts, signed whole
    numbers, fractions and whole numbers too large for the FFT to be exact: every lag's product sum equals
    numpy's correlate of the row alone, bit for bit (a zero sum included: +0.0)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3 * _FFT_FROM))
    y = (rng.random((rows, n)) < rng.random()).astype(float)
    if kind == "counts":
        y *= rng.integers(0, 17, size=y.shape)
    elif kind == "signed":
        y *= rng.integers(-8, 9, size=y.shape)
    elif kind == "fractional":
        y *= rng.random(y.shape) * 8
    elif kind == "huge":
        y *= 2.0 ** 20
    lags = np.unique(rng.integers(0, n, size=int(rng.integers(1, 60))))
    got = lag_products(y, lags)
    want = np.array([np.correlate(row, row, mode="full")[n - 1 + lags] for row in y])
    assert got.tobytes() == want.tobytes()


def test_bad_parameters_are_one_clear_error():
    from spotlab.errors import PredictionError

    with pytest.raises(PredictionError, match="min_pairs"):
        make_predictor("reversion", min_pairs=1)
    with pytest.raises(PredictionError, match="needs at least 25 slots"):
        make_predictor("reversion").fit(np.ones(10))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31 - 1), kind=st.sampled_from(["0/1", "counts", "fractional"]))
def test_rows_of_their_own_lengths_are_each_row_cut_to_its_length(seed, kind):
    rng = np.random.default_rng(seed)
    G = int(rng.integers(1, 7))
    n = rng.choice([3, 24, 25, 47, 48, 60, _FFT_FROM - 1, _FFT_FROM + 1, 3 * _FFT_FROM], size=G)
    y = np.zeros((G, int(n.max())))
    for r in range(G):
        row = (rng.random(n[r]) < rng.random()).astype(float)
        if kind == "counts":
            row *= rng.integers(0, 9, size=n[r])
        elif kind == "fractional":
            row *= rng.random(n[r]) * 8
        y[r, :n[r]] = row
    lags = np.unique(rng.integers(0, 40, size=int(rng.integers(1, 12))))
    period = int(rng.choice([1, 24]))
    profile = daily_profile(y, period, n)
    stats = lag_stats(y, lags, lengths=n)
    for r in range(G):
        cut = y[r, :n[r]]
        assert profile[r].tobytes() == daily_profile(cut, period).tobytes()
        for got, want in zip(stats, lag_stats(cut, lags)):
            assert got[r].tobytes() == want.tobytes()
