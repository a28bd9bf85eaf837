"""Predictors, rolling-origin evaluation and the noisy oracle (SPEC §5).

Small synthetic series and few refits keep the file fast; the properties checked are the ones the
sensitivity experiments rely on: no look-ahead, a daily term pays on a daily cycle, clipping, quantile
order, oracle determinism and error growth, and precise errors on bad input.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import PredictionError, SpotlabError
from spotlab.market.synthetic import synthetic_market
from spotlab.predict import metrics
from spotlab.predict.base import Predictor
from spotlab.predict.evaluate import (
    compare,
    evaluate_zones,
    parse_horizons,
    rolling_origin,
    target_series,
)
from spotlab.predict.forecaster import Forecaster
from spotlab.predict.oracle import AvailabilityOracle, NoisyOracle
from spotlab.predict.registry import MODELS, make_predictor

# Cheap settings so that every model fits in well under a second on one core.
FAST = {"gbm": {"max_iter": 30}, "arima": {"order": (1, 1, 1)},
        "auto": {"candidates": ("seasonal_naive", "ets", "duration"), "min_scored": 12}}


def fast(name: str, **extra) -> Predictor:
    return make_predictor(name, **{**FAST.get(name, {}), **extra})


def daily_cycle(days: int = 12, noise: float = 0.5, seed: int = 0) -> np.ndarray:
    """A strong daily cycle at 1-h slots: 8 +- 6 GPUs, plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(24 * days)
    return 8 + 6 * np.sin(2 * np.pi * t / 24) + rng.normal(0, noise, t.size)


@pytest.fixture(scope="module")
def market():
    return synthetic_market(24 * 10, slot_hours=1.0, requested=8, seed=3)


# ------------------------------------------------------------------------------------ no look-ahead


@pytest.mark.parametrize("name", list(MODELS))
def test_forecast_at_t_ignores_data_after_t(name, market):
    """Fit, then update slot by slot up to t: the forecast at t must not change when y[t+1:] changes."""
    y = market.avail.astype(float)
    t, fit_end = 150, 120
    altered = y.copy()
    altered[t + 1:] = np.random.default_rng(9).integers(0, 9, altered.size - t - 1)
    out = []
    for series in (y, altered):
        model = fast(name).fit(series[:fit_end], t0=0, slot_hours=1.0)
        model.update(series[fit_end:t + 1])
        out.append((model.predict(6), model.predict_quantile(6, 0.1)))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


@pytest.mark.parametrize("name", list(MODELS))
def test_rolling_origin_never_looks_ahead(name, market):
    """Altering the data after slot T leaves every forecast made at an origin <= T unchanged,
    and the scores of the origins whose targets are all <= T too."""
    y = market.avail.astype(float)
    T = 170
    altered = y.copy()
    altered[T + 1:] = market.requested - altered[T + 1:]
    kw = dict(horizons=(1, 3), train_slots=96, refit_every=24, slot_hours=1.0, requested=8,
              quantile=0.9, start=95, stop=200, params=FAST.get(name))
    a, b = rolling_origin(y, name, **kw), rolling_origin(altered, name, **kw)
    early = a.frame["origin"] <= T
    cols = ["forecast", "q0.9"]
    pd.testing.assert_frame_equal(a.frame.loc[early, cols], b.frame.loc[early, cols])
    scored = a.frame["origin"] + a.frame["h"] <= T
    pd.testing.assert_frame_equal(a.frame[scored], b.frame[scored])
    assert not a.frame.loc[~early, "forecast"].equals(b.frame.loc[~early, "forecast"])  # the test has teeth


# ------------------------------------------------------------------------------- structure is learnt


def test_daily_term_beats_persistence_on_a_daily_cycle():
    y = daily_cycle()
    kw = dict(horizons=(3, 6, 12), train_slots=168, refit_every=24, slot_hours=1.0, start=167, stop=215,
              target="price")
    pers = rolling_origin(y, "persistence", **kw).scores()["mae"]
    models = {
        "seasonal_naive": make_predictor("seasonal_naive"),
        "ets": make_predictor("ets", seasonal=True),
        "arima": make_predictor("arima", order=(1, 0, 0), seasonal=True),
        "gbm": make_predictor("gbm", max_iter=50),
    }
    for label, model in models.items():
        mae = rolling_origin(y, model, **kw).scores()["mae"]
        assert (mae < pers).all(), f"{label} does not beat persistence on a daily cycle: {mae.to_dict()} vs {pers.to_dict()}"
        assert mae.mean() < 0.5 * pers.mean(), label


def test_auto_earns_its_horizons():
    """On a daily cycle `auto` switches to a daily model once it has beaten persistence on scored outcomes
    (and beats persistence overall); on a random walk nothing earns it and it stays persistence."""
    kw = dict(horizons=(1, 6, 12), train_slots=168, refit_every=24, slot_hours=1.0, target="price")
    y = daily_cycle(days=16)
    auto = rolling_origin(y, fast("auto"), **kw)
    pers = rolling_origin(y, "persistence", **kw).scores()["mae"]
    assert (auto.scores()["mae"] < pers).all(), (auto.scores()["mae"].to_dict(), pers.to_dict())
    walk = 50 + np.cumsum(np.random.default_rng(4).normal(size=24 * 16))
    model = fast("auto").fit(walk[:168], slot_hours=1.0)
    for v in walk[168:]:
        model.update([v])
    assert model.chosen()[:12] == ["persistence"] * 12
    np.testing.assert_array_equal(model.predict(12), np.full(12, walk[-1]))
    with pytest.raises(PredictionError, match="auto: unknown candidate 'nope'"):
        make_predictor("auto", candidates="ets,nope")


def test_persistence_is_exact():
    y = np.array([3.0, 5.0, 4.0, 4.0, 7.0, 6.0])
    m = make_predictor("persistence").fit(y)
    np.testing.assert_array_equal(m.predict(4), np.full(4, 6.0))
    m.update([2.0])
    np.testing.assert_array_equal(m.predict(2), [2.0, 2.0])
    res = rolling_origin(y, "persistence", horizons=(1, 2), train_slots=2, refit_every=3, target="price")
    f = res.frame
    np.testing.assert_array_equal(f["forecast"], y[f["origin"]])
    np.testing.assert_array_equal(f["actual"], y[f["origin"] + f["h"]])
    assert f["origin"].unique().tolist() == [1, 2, 3]  # start = train_slots - 1, stop = n - max(h)
    expected = np.mean(np.abs(y[2:5] - y[1:4]))
    assert res.scores().loc[1, "mae"] == pytest.approx(expected)


def test_seasonal_naive_repeats_the_last_day():
    y = np.arange(48.0)
    m = make_predictor("seasonal_naive").fit(y, slot_hours=2.0)  # 12 slots a day
    np.testing.assert_array_equal(m.predict(14), np.r_[np.arange(36.0, 48.0), 36.0, 37.0])


def test_arima_update_matches_statsmodels_append(market):
    y = market.avail.astype(float)
    m = make_predictor("arima", order=(1, 1, 1)).fit(y[:120])
    m.update(y[120:140])
    ref = m.result_.append(y[120:140]).get_forecast(5)
    np.testing.assert_allclose(m.predict(5), ref.predicted_mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(m.predict_quantile(5, 0.9), ref.conf_int(alpha=0.2)[:, 1], rtol=1e-5, atol=1e-6)


def test_ets_states_match_statsmodels():
    from statsmodels.tsa.holtwinters import ExponentialSmoothing

    y = daily_cycle(days=5, seed=1)
    m = make_predictor("ets", seasonal=True).fit(y)
    ref = ExponentialSmoothing(y, seasonal="add", seasonal_periods=24, initialization_method="heuristic").fit()
    np.testing.assert_allclose(m.predict(30), ref.forecast(30), rtol=1e-8, atol=1e-8)
    # update with fixed parameters == statsmodels' filter over the longer series with the same parameters
    y2 = daily_cycle(days=6, seed=1)
    m.update(y2[y.size:])
    p = ref.params
    fixed = ExponentialSmoothing(
        y2, seasonal="add", seasonal_periods=24, initialization_method="known",
        initial_level=p["initial_level"], initial_seasonal=p["initial_seasons"],
    ).fit(smoothing_level=p["smoothing_level"], smoothing_seasonal=p["smoothing_seasonal"], optimized=False)
    np.testing.assert_allclose(m.predict(10), fixed.forecast(10), rtol=1e-8, atol=1e-8)


# --------------------------------------------------------------------------- targets and quantiles


class Fixed(Predictor):
    """Forecasts a fixed path (to test the wrapper, not a model)."""

    name = "fixed"

    def __init__(self, path=(-2.0, 3.0, 20.0)) -> None:
        self.path = path

    def _fit(self, y):
        pass

    def _predict(self, w):
        return np.resize(np.asarray(self.path, dtype=float), w)

    def _insample_errors(self, w):
        return [np.array([-1.5, -0.5, 0.0, 0.5, 1.5])] * w


def test_forecaster_clips_and_rounds():
    fc = Forecaster(Fixed(), "availability", requested=8).fit([1, 2, 3])
    np.testing.assert_array_equal(fc.predict(3), [0.0, 3.0, 8.0])
    whole = Forecaster(Fixed((2.4, 2.6)), "availability", requested=8, round_point=True).fit([1, 2])
    np.testing.assert_array_equal(whole.predict(2), [2.0, 3.0])
    q = fc.predict_quantile(3, 0.9)  # lower tail, rounded down, within 0..8
    np.testing.assert_array_equal(q, [0.0, 1.0, 8.0])
    price = Forecaster(Fixed((-1.0, 2.5)), "price").fit([1.0, 2.0])
    np.testing.assert_array_equal(price.predict(2), [0.0, 2.5])
    assert np.all(price.predict_quantile(2, 0.9) >= price.predict_quantile(2, 0.5))
    with pytest.raises(PredictionError, match="slot 2 is 9"):
        Forecaster(Fixed(), "availability", requested=8).fit([1, 2, 9])


@pytest.mark.parametrize("name", list(MODELS))
def test_quantiles_are_ordered(name, market):
    y = market.avail.astype(float)[:150]
    model = fast(name).fit(y, slot_hours=1.0)
    qs = [model.predict_quantile(12, q) for q in (0.1, 0.5, 0.9)]
    assert np.all(qs[0] <= qs[1] + 1e-12) and np.all(qs[1] <= qs[2] + 1e-12)
    fc = Forecaster(fast(name), "availability", requested=8).fit(y)
    assured, median = fc.predict_quantile(12, 0.9), fc.predict_quantile(12, 0.5)
    assert np.all(assured <= median) and np.all((assured >= 0) & (assured <= 8))
    assert np.all(assured == np.floor(assured))
    assert np.all((fc.predict(12) >= 0) & (fc.predict(12) <= 8))


def test_scores_hit_rate_and_coverage(market):
    res = rolling_origin(market, "persistence", horizons=(1, 6), train_slots=48, refit_every=24, quantile=[0.5, 0.9])
    sc = res.scores()
    assert {"mae", "rmse", "smape", "n", "hit_ge1", "prec_ge1", "hit_ge8", "cover_q0.9", "pinball_q0.9"} <= set(sc.columns)
    assert (sc["cover_q0.9"] >= sc["cover_q0.5"]).all()
    assert sc.loc[1, "cover_q0.9"] > 0.8
    f, a = np.array([0.0, 2.6, 8.0]), np.array([0.0, 3.0, 7.0])
    assert metrics.smape(f, a) == pytest.approx(100 * (0 + 0.8 / 5.6 + 2 / 15) / 3)
    assert metrics.hit_rate(f, a, 8) == pytest.approx(2 / 3)
    assert metrics.precision(f, a, 8) == 0.0
    assert metrics.coverage(np.array([1.0, 4.0]), np.array([2.0, 3.0]), "availability") == 0.5


# ------------------------------------------------------------------------------------------ oracle


def test_oracle_sigma_zero_is_perfect_foresight():
    truth = np.array([3.0, 0.0, 7.5])
    np.testing.assert_array_equal(NoisyOracle(0.0).forecast(truth, 5), truth)
    np.testing.assert_array_equal(AvailabilityOracle(0.0, requested=8).forecast([3, 8, 0], 1), [3, 8, 0])


def test_oracle_is_seeded_and_prefix_stable():
    o = NoisyOracle(0.2, seed=4)
    truth = np.linspace(1, 2, 10)
    np.testing.assert_array_equal(o.forecast(truth, 7), o.forecast(truth, 7))
    np.testing.assert_array_equal(o.forecast(truth[:4], 7), o.forecast(truth, 7)[:4])
    assert not np.array_equal(o.forecast(truth, 7), o.forecast(truth, 8))
    assert not np.array_equal(o.forecast(truth, 7), NoisyOracle(0.2, seed=5).forecast(truth, 7))
    a = AvailabilityOracle(0.5, seed=1, requested=8).forecast(np.full(24, 6.0), 3)
    assert np.all(a == np.round(a)) and a.min() >= 0 and a.max() <= 8


@pytest.mark.parametrize("cumulative", [False, True])
def test_oracle_error_grows_like_sqrt_h(cumulative):
    o = NoisyOracle(0.05, seed=0, cumulative=cumulative)
    rel = np.stack([o.forecast(np.ones(16), t) - 1.0 for t in range(4000)])
    sd = rel.std(axis=0)
    np.testing.assert_allclose(sd, 0.05 * np.sqrt(np.arange(1, 17)), rtol=0.08)


# -------------------------------------------------------------------------------------- bad inputs


def test_too_little_history():
    with pytest.raises(PredictionError, match=r"gbm: needs at least 72 slots .* got 30"):
        make_predictor("gbm").fit(np.ones(30), slot_hours=1.0)
    with pytest.raises(PredictionError, match="seasonal_naive: needs at least 144 slots"):
        make_predictor("seasonal_naive").fit(np.ones(100), slot_hours=1 / 6)
    with pytest.raises(PredictionError, match="empty history"):
        make_predictor("persistence").fit([])


@pytest.mark.parametrize("name", list(MODELS))
def test_constant_history_forecasts_the_constant(name):
    model = fast(name).fit(np.full(100, 5.0), slot_hours=1.0)
    np.testing.assert_allclose(model.predict(6), 5.0, atol=1e-9)
    np.testing.assert_allclose(model.predict_quantile(6, 0.9), 5.0, atol=1e-9)
    if name in ("ets", "arima"):
        assert model.fallback_ and "constant" in model.fallback_
    model.update([6.0, 7.0])  # still usable; the fallback follows the last value
    assert np.isfinite(model.predict(3)).all()


def test_gaps_name_the_slot():
    y = np.arange(50.0)
    y[37] = np.nan
    with pytest.raises(PredictionError, match=r"slot 137 is NaN \(a gap\)"):
        make_predictor("ets").fit(y, t0=100)
    m = make_predictor("persistence").fit(np.ones(5), t0=10)
    with pytest.raises(PredictionError, match="slot 16 is inf"):
        m.update([1.0, np.inf])


@pytest.mark.parametrize("bad", [0, -1, 1.5, "x", True, None])
def test_bad_forecast_window(bad):
    m = make_predictor("persistence").fit(np.ones(5))
    with pytest.raises(PredictionError, match="forecast window w"):
        m.predict(bad)


@pytest.mark.parametrize("bad, msg", [("0,1", "not a whole number of slots >= 1"), ("1,a", "'a' is not"),
                                      ([], "at least one horizon"), ([2.5], "2.5")])
def test_bad_horizons(bad, msg):
    with pytest.raises(PredictionError, match=msg):
        parse_horizons(bad)
    assert parse_horizons("12, 1,2,2") == (1, 2, 12)


def test_bad_models_and_parameters():
    with pytest.raises(PredictionError, match="unknown model .prophet.; known: persistence, seasonal_naive"):
        make_predictor("prophet")
    with pytest.raises(PredictionError, match=r"has no parameter 'lags'; its parameters \(defaults\): n_lags=6"):
        make_predictor("gbm", lags=3)
    with pytest.raises(PredictionError, match="order must be three whole numbers"):
        make_predictor("arima", order=(1, 0))
    with pytest.raises(PredictionError, match="seasonal ARIMA with 144 slots per period is too slow"):
        make_predictor("arima", seasonal=True).fit(np.random.default_rng(0).normal(size=2000), slot_hours=1 / 6)
    assert make_predictor("arima", order="1,0,1", seasonal="false").order == (1, 0, 1)
    assert make_predictor("gbm", max_iter="20", learning_rate="0.2").max_iter == 20
    with pytest.raises(PredictionError, match="max_iter='many' is not a valid int"):
        make_predictor("gbm", max_iter="many")
    with pytest.raises(PredictionError, match="before update/predict"):
        make_predictor("ets").predict(3)
    with pytest.raises(PredictionError, match="strictly between 0 and 1"):
        make_predictor("persistence").fit([1.0, 2.0]).predict_quantile(2, 1.0)
    assert issubclass(PredictionError, SpotlabError)


def test_bad_evaluation_settings(market):
    with pytest.raises(PredictionError, match="no origins to evaluate"):
        rolling_origin(market, "persistence", horizons=(1, 12), train_slots=240)
    with pytest.raises(PredictionError, match="stop must be <= 228"):
        rolling_origin(market, "persistence", horizons=(12,), train_slots=24, stop=239)
    with pytest.raises(PredictionError, match="no spot price"):
        target_series(market.with_prices(spot_price=float("nan")), "price")
    with pytest.raises(PredictionError, match="refit_every must be a whole number >= 1"):
        rolling_origin(market, "persistence", train_slots=24, refit_every=0)


# ---------------------------------------------------------------------------------- comparisons


def test_compare_and_zones(market):
    other = synthetic_market(24 * 10, slot_hours=1.0, requested=8, seed=4, regime="volatile")
    kw = dict(horizons=(1, 6), train_slots=48, refit_every=24)
    one = compare(market, ["seasonal_naive"], **kw)
    assert list(one["model"].unique()) == ["persistence", "seasonal_naive"]
    assert (one.loc[one["model"] == "persistence", "skill_mae"] == 0).all()
    df = evaluate_zones({"a": market, "b": other}, ["seasonal_naive"], n_jobs=2, **kw)
    assert set(df["zone"]) == {"a", "b"} and len(df) == 2 * 2 * 2
    b = df[(df["zone"] == "b") & (df["model"] == "seasonal_naive")].set_index("h")
    ref = compare(other, ["seasonal_naive"], **kw)
    ref = ref[ref["model"] == "seasonal_naive"].set_index("h")
    np.testing.assert_allclose(b["mae"], ref["mae"])
    np.testing.assert_allclose(b["skill_mae"], ref["skill_mae"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False), min_size=1, max_size=60),
       st.floats(0.0, 1.0))
def test_quantile_of_sorted_errors_is_numpys_to_the_bit(values, q):
    """Forecast intervals sort each horizon's errors once and read every level from them: the value must be
    exactly `np.quantile`'s, or the published tables would move in their last digits."""
    from spotlab.predict.base import linear_quantile

    arr = np.asarray(values)
    assert linear_quantile(np.sort(arr), q) == float(np.quantile(arr, q))


def test_repeated_forecasts_of_one_state_are_computed_once():
    """The point forecast is asked again by each quantile level at the same origin; it is memoised per state
    (fit / update) and callers get their own copy."""
    calls = []

    class Counting(make_predictor("persistence").__class__):
        def _predict(self, w):
            calls.append(w)
            return super()._predict(w)

    m = Counting().fit(np.arange(20.0))
    a = m.predict(3)
    a[:] = -1  # a caller's copy: the memo is untouched
    assert m.predict(3).tolist() == [19.0, 19.0, 19.0]
    m.predict_quantile(3, 0.9)
    assert calls == [3]
    m.update([25.0])
    assert m.predict(3).tolist() == [25.0, 25.0, 25.0] and calls == [3, 3]
