"""Rolling origin's spell columns: what lasted, the probability a model gives it, and their Brier scores."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import PredictionError
from spotlab.predict.evaluate import compare, evaluate_zones, rolling_origin, score_task, spell_lasts, zone_scores, zone_tasks
from spotlab.predict.registry import make_predictor


def test_lasted_and_up_by_hand():
    y = np.array([1, 1, 1, 0, 0, 1, 1, 1, 1, 1.0])
    res = rolling_origin(y, "persistence", horizons=(1, 2), train_slots=2, refit_every=1, requested=1, spells=True)
    f = res.frame.set_index(["origin", "h"])
    # origin 1 (up, the spell ends after slot 2): lasts 1 slot, not 2; origin 3 (down, back up at 5): lasts 1
    assert f.loc[(1, 1), "lasted"] and not f.loc[(1, 2), "lasted"]
    assert f.loc[(3, 1), "lasted"] and not f.loc[(3, 2), "lasted"] and not f.loc[(3, 1), "up"]
    assert not f.loc[(2, 1), "lasted"] and f.loc[(5, 2), "lasted"]
    assert (f["lasts"] == 1.0).all()  # persistence says every spell lasts
    sc = res.scores()
    # persistence's probabilities are 0/1: its Brier score is its error rate, its MAE on a 0/1 series
    np.testing.assert_allclose(sc["brier"], sc["mae"])
    lasted = res.frame.groupby("h")["lasted"].mean()
    np.testing.assert_allclose(sc["brier_stay"], 1 - lasted)


def test_spell_lasts_from_a_path_or_the_models_own():
    pers = make_predictor("persistence").fit([1.0, 1.0])
    np.testing.assert_array_equal(spell_lasts(pers, np.array([0.9, 0.6, 0.4, 0.8]), 1.0), [1, 1, 0, 0])
    np.testing.assert_array_equal(spell_lasts(pers, np.array([0.1, 0.6, 0.0]), 0.0), [1, 0, 0])
    m = make_predictor("spells").fit(np.r_[np.ones(20), np.zeros(4), np.ones(9)], slot_hours=1 / 6)
    np.testing.assert_array_equal(spell_lasts(m, m.predict(6), 1.0), m.p_spell_lasts(6))


def test_spells_beat_persistence_on_random_spell_lengths():
    """Up spells of 6-10 slots, down spells of 2-3: the age of a spell says when it ends, persistence cannot."""
    rng = np.random.default_rng(3)
    y = np.concatenate([np.r_[np.ones(rng.integers(6, 11)), np.zeros(rng.integers(2, 4))] for _ in range(250)])
    df = compare(y, ["spells"], horizons=(1, 3, 6), train_slots=600, refit_every=100, requested=1, spells=True,
                 slot_hours=1 / 6)
    s = df[df.model == "spells"].set_index("h")
    assert (s["skill_brier"] > 0.2).all() and (s["skill_brier_stay_up"] > 0.2).all(), s.filter(like="skill")


def test_spells_is_for_availability():
    with pytest.raises(PredictionError, match="spells=True"):
        rolling_origin(np.ones(50), "persistence", horizons=(1,), train_slots=10, target="price", spells=True)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), order_seed=st.integers(0, 10_000),
       models=st.lists(st.sampled_from(["seasonal_naive", "ets", "duration", "gbm"]), min_size=1, max_size=2, unique=True))
def test_zone_tasks_in_any_order_give_evaluate_zones(seed, order_seed, models):
    """The pieces of `evaluate_zones` are independent: scored in any order and joined, the same frame."""
    rng = np.random.default_rng(seed)
    zones = {f"z{i}": np.clip(np.cumsum(rng.integers(-1, 2, 24 * 6)), 0, 4).astype(float) for i in range(2)}
    kw = dict(horizons=(1, 3), train_slots=72, refit_every=24, quantile=(0.5, 0.9))
    whole = evaluate_zones(zones, models, n_jobs=1, **kw)
    tasks = zone_tasks(zones, models, **kw)
    order = np.random.default_rng(order_seed).permutation(len(tasks))
    parts: list = [None] * len(tasks)
    for i in order:
        parts[i] = score_task(tasks[i])
    timing = ["fit_s", "forecast_s"]
    pd.testing.assert_frame_equal(zone_scores(tasks, parts).drop(columns=timing), whole.drop(columns=timing),
                                  check_exact=True)
