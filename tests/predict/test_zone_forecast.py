"""Forecasts of every zone at once: shape (zones, w), the same numbers as one zone's Forecaster, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import PredictionError
from spotlab.market.market import Market
from spotlab.market.zones import ZonedMarket
from spotlab.predict.forecaster import Forecaster
from spotlab.predict.registry import make_predictor
from spotlab.predict.zone_forecast import forecast_zones, spell_probabilities


@pytest.fixture
def zoned():
    rng = np.random.default_rng(0)
    n = 300
    a = (rng.random(n) < 0.9).astype(np.int64) * 8
    b = np.repeat(rng.integers(0, 2, n // 20), 20).astype(np.int64) * 8
    c = np.full(n, 8)
    markets = tuple(Market(v, np.full(n, 1.0), np.full(n, 3.0), 1 / 6, requested=8, name=z)
                    for v, z in zip((a, b, c), ("za", "zb", "zc")))
    return ZonedMarket(markets, ("za", "zb", "zc"), ("r", "r", "s"))


def test_shape_and_the_same_numbers_as_one_forecaster(zoned):
    f = forecast_zones(zoned, 199, 12)
    assert f.shape == (3, 12) and np.all((f >= 0) & (f <= 8))
    one = Forecaster(make_predictor("spells"), "availability", 8).fit(zoned.zones[1].avail[:200], slot_hours=1 / 6)
    np.testing.assert_allclose(f[1], one.predict(12))
    np.testing.assert_array_equal(f[2], 8.0)  # a zone that always granted
    assured = forecast_zones(zoned, 199, 12, q=0.9, train_slots=100)
    assert assured.shape == (3, 12) and np.all(assured <= 8) and np.all(assured == np.floor(assured))
    p, lasts = spell_probabilities(zoned, 199, 12)
    assert p.shape == lasts.shape == (3, 12)
    np.testing.assert_allclose(8 * p, f)
    assert forecast_zones(zoned, 199, 6, model="persistence").shape == (3, 6)


@pytest.mark.parametrize("kw, msg", [({"t": 300}, "t must be a slot"), ({"t": -1}, "t must be a slot"),
                                     ({"train_slots": 0}, "train_slots"), ({"model": "nope"}, "nope"),
                                     ({"w": 0}, "w must be")])
def test_bad_input(zoned, kw, msg):
    args = {"t": 100, "w": 6, **kw}
    with pytest.raises(PredictionError, match=msg):
        forecast_zones(zoned, **args)
