"""Rolling origin's spell columns: what lasted, the probability a model gives it, and their Brier scores."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import PredictionError
from spotlab.predict.evaluate import compare, rolling_origin, spell_lasts
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
