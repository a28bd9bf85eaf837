"""The run-length-aware model: no look-ahead, learns deterministic spells, falls back to persistence on noise."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spotlab.predict.duration import run_lengths
from spotlab.predict.evaluate import rolling_origin
from spotlab.predict.registry import make_predictor


def semi_markov(n: int = 2000, up: int = 7, down: int = 3) -> np.ndarray:
    """0/1 availability with deterministic spells: `up` slots available, then `down` slots not."""
    return np.array([1.0 if i % (up + down) < up else 0.0 for i in range(n)])


def test_run_lengths():
    np.testing.assert_array_equal(run_lengths(np.array([1, 1, 0, 0, 0, 1.0])), [1, 2, 1, 2, 3, 1])


def test_forecast_at_t_ignores_data_after_t():
    rng = np.random.default_rng(1)
    y = semi_markov(600)
    t, fit_end = 450, 400
    altered = y.copy()
    altered[t + 1:] = rng.integers(0, 2, altered.size - t - 1)
    out = []
    for series in (y, altered):
        model = make_predictor("duration").fit(series[:fit_end], slot_hours=1 / 6)
        model.update(series[fit_end:t + 1])
        out.append((model.predict(12), model.predict_quantile(12, 0.1)))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_rolling_origin_never_looks_ahead():
    y = semi_markov(900)
    T = 600
    altered = y.copy()
    altered[T + 1:] = 1 - altered[T + 1:]
    kw = dict(horizons=(1, 3, 6), train_slots=300, refit_every=100, slot_hours=1 / 6, requested=1,
              quantile=0.9, start=299, stop=800)
    a, b = rolling_origin(y, "duration", **kw), rolling_origin(altered, "duration", **kw)
    early = a.frame["origin"] <= T
    pd.testing.assert_frame_equal(a.frame.loc[early, ["forecast", "q0.9"]], b.frame.loc[early, ["forecast", "q0.9"]])


def test_beats_persistence_on_deterministic_spells():
    y = semi_markov(2000)
    res = rolling_origin(y, "duration", horizons=(1, 2, 3, 6), train_slots=500, refit_every=144,
                         slot_hours=1 / 6, requested=1).scores()
    pers = rolling_origin(y, "persistence", horizons=(1, 2, 3, 6), train_slots=500, refit_every=144,
                          slot_hours=1 / 6, requested=1).scores()
    assert (res["mae"] < 0.05).all()  # the spells are deterministic: the model knows every change
    assert (res["mae"] <= pers["mae"] - 0.1).all()


def test_never_worse_than_persistence_on_a_random_walk():
    rng = np.random.default_rng(4)
    y = np.clip(8 + np.cumsum(rng.integers(-1, 2, 3000)), 0, 16).astype(float)
    kw = dict(horizons=(1, 3, 6, 12), train_slots=1008, refit_every=144, slot_hours=1 / 6, requested=16)
    res = rolling_origin(y, "duration", **kw).scores()
    pers = rolling_origin(y, "persistence", **kw).scores()
    assert (res["mae"] <= pers["mae"] * 1.01).all()
