"""The spell model: a case computed by hand, its contract (ranges, shapes, quantiles, bad parameters) and
properties over random 0/1 and count series."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import PredictionError
from spotlab.predict.forecaster import Forecaster
from spotlab.predict.registry import make_predictor
from spotlab.predict.spells import Spells


def test_a_case_computed_by_hand():
    """States 0,1,1,0,1,1,0,1 at 1-h slots, no shrinkage: up spells end at age 2 (2 of 2), never at age 1 (0 of 2);
    down spells end at age 1 in 2 of the 3 slots at risk (the first spell's end is not counted, its age is unknown).
    From an up spell of age 1: up for sure at t+1; at t+2 the spell has ended (hazard 0.999, the cap); at t+3 the
    down spell has ended with 2/3 and the 0.001 left of the first spell ended with its pooled rate 2/4."""
    y = np.array([0, 1, 1, 0, 1, 1, 0, 1.0])
    m = Spells(prior_hours=1e-9, bucket_slots=0.0, max_run_bucket=2).fit(y, slot_hours=1.0)
    np.testing.assert_allclose(m.p_spell_lasts(3), [1.0, 0.001, 0.0005], atol=1e-6)
    np.testing.assert_allclose(m.p_available(3), [1.0, 0.001, 0.999 * 2 / 3 + 0.0005], atol=1e-6)
    np.testing.assert_allclose(m.predict(3), m.p_available(3))  # 0/1: the point forecast is the probability
    np.testing.assert_array_equal(m.predict_quantile(3, 0.5), [1.0, 0.0, 1.0])


def test_counts_forecast_requested_times_probability():
    y = 8.0 * np.array([0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1] * 5)
    p = make_predictor("spells").fit(y / 8.0, slot_hours=1 / 6).p_available(12)
    fc = Forecaster(make_predictor("spells"), "availability", requested=8).fit(y, slot_hours=1 / 6)
    np.testing.assert_allclose(fc.predict(12), 8 * p)
    assured = fc.predict_quantile(12, 0.9)
    assert set(np.unique(assured)) <= {0.0, 8.0}
    np.testing.assert_array_equal(assured == 8.0, p > 0.9)  # 8 GPUs assured with probability 0.9 iff P(up) > 0.9


def test_a_short_history_uses_the_prior():
    """One drop seen after 20 slots up: the down spell ends at the prior's rate, so recovery is expected."""
    m = make_predictor("spells").fit(np.r_[np.ones(20), 0.0], slot_hours=1 / 6)
    p = m.p_available(36)
    assert 0 < p[0] < p[-1] < 1 and np.all(np.diff(p) > 0)
    longer = make_predictor("spells", prior_down_hours=12.0).fit(np.r_[np.ones(20), 0.0], slot_hours=1 / 6)
    assert np.all(longer.p_available(36) < p)


@pytest.mark.parametrize("kw, word", [({"prior_up_hours": 0}, "prior_up_hours"), ({"bucket_slots": -1}, "bucket_slots"),
                                      ({"half_life_hours": "x"}, "half_life_hours"),
                                      ({"max_run_bucket": 2.5}, "max_run_bucket"), ({"smooth": 1}, "smooth")])
def test_bad_parameters_are_one_line(kw, word):
    with pytest.raises(PredictionError, match=word) as err:
        make_predictor("spells", **kw)
    assert "\n" not in str(err.value)


def test_state_follows_updates():
    m = make_predictor("spells").fit(np.r_[np.ones(30), np.zeros(5), np.ones(10)], slot_hours=1 / 6)
    m.update([0.0, 0.0])
    assert m.state_ is False and m.age_ == 2
    assert m.p_available(1)[0] < 0.5


binary = st.lists(st.booleans(), min_size=2, max_size=150).map(lambda v: np.array(v, dtype=float))
counts = st.lists(st.integers(0, 8), min_size=2, max_size=150).map(lambda v: np.array(v, dtype=float))
params = st.fixed_dictionaries({"half_life_hours": st.sampled_from([None, 6.0]),
                                "max_run_bucket": st.sampled_from([0, 3, 16])})
slots = st.sampled_from([1 / 6, 195 / 3600, 1.0])


@settings(max_examples=150, deadline=None, derandomize=True)
@given(y=st.one_of(binary, counts), kw=params, slot_hours=slots, t0=st.integers(0, 500))
def test_probabilities_and_ranges(y, kw, slot_hours, t0):
    m = Spells(**kw).fit(y, t0=t0, slot_hours=slot_hours)
    p, lasts = m.p_available(40), m.p_spell_lasts(40)
    assert p.shape == lasts.shape == (40,)
    assert np.all((p >= 0) & (p <= 1)) and np.all((lasts >= 0) & (lasts <= 1))
    assert np.all(np.diff(lasts) <= 1e-12)  # a spell can only end
    same = p if m.state_ else 1 - p
    assert np.all(lasts <= same + 1e-9)  # lasting implies being in the same state
    f = m.predict(40)
    assert np.all((f >= y.min() - 1e-9) & (f <= y.max() + 1e-9))
    qs = [m.predict_quantile(40, q) for q in (0.05, 0.5, 0.95)]
    assert np.all(qs[0] <= qs[1]) and np.all(qs[1] <= qs[2])
    assert np.all(np.isin(qs[1], y))  # quantiles are values that were seen


@settings(max_examples=60, deadline=None, derandomize=True)
@given(y=st.one_of(binary, counts), slot_hours=slots)
def test_forecasts_converge_to_the_long_run_mean(y, slot_hours):
    m = Spells().fit(y, slot_hours=slot_hours)
    far = m.predict(3000)[-50:]
    np.testing.assert_allclose(far, m.long_run(), atol=2e-3)
    assert y.min() - 1e-9 <= m.long_run() <= y.max() + 1e-9


@settings(max_examples=30, deadline=None, derandomize=True)
@given(n=st.integers(1, 300), level=st.sampled_from([1.0, 8.0]), kw=params)
def test_always_available_forecasts_available(n, level, kw):
    m = Spells(**kw).fit(np.full(n, level), slot_hours=1 / 6)
    np.testing.assert_array_equal(m.predict(24), level)
    np.testing.assert_array_equal(m.predict_quantile(24, 0.05), level)
    np.testing.assert_array_equal(m.p_spell_lasts(24), 1.0)
    fc = Forecaster(Spells(**kw), "availability", requested=int(level)).fit(np.full(n, level), slot_hours=1 / 6)
    np.testing.assert_array_equal(fc.predict_quantile(24, 0.99), level)
