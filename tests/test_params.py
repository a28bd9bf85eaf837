"""Declarative parameters: scikit-learn's protocol (get/set params, clone, repr) and constraints declared once
per class, checked in one place, for every registered policy and predictor."""

from __future__ import annotations

import pytest
from sklearn.base import clone

from spotlab.errors import PolicyError, PredictionError
from spotlab.policies.registry import REGISTRY, policy_class
from spotlab.predict.registry import MODELS, make_predictor, predictor_class


@pytest.mark.parametrize("name", list(REGISTRY))
def test_policies_follow_the_estimator_protocol(name):
    cls = policy_class(name)
    p = cls()
    p.check_params()  # the defaults are valid
    q = clone(p)  # scikit-learn's clone accepts them
    assert type(q) is cls and q.get_params() == p.get_params() and q is not p
    assert repr(p).startswith(cls.__name__ + "(")
    for key, kinds in cls._parameter_constraints.items():
        assert key in p.get_params(), f"{name}: constraint on unknown parameter {key}"


@pytest.mark.parametrize("name", list(MODELS))
def test_predictors_follow_the_estimator_protocol(name):
    m = make_predictor(name)
    assert clone(m).get_params() == m.get_params()
    for key in predictor_class(name)._parameter_constraints:
        assert key in m.get_params()


def test_set_params_checks_names_and_values():
    p = policy_class("chc")()
    assert p.set_params(w=6, v=2).get_params()["w"] == 6
    with pytest.raises(PolicyError, match="has no parameter 'window'"):
        p.set_params(window=3)
    with pytest.raises(PolicyError, match=r"chc: w must be a whole number >= 1 \(got 0\)"):
        p.set_params(w=0)
    with pytest.raises(PolicyError, match="v=7 cannot exceed the window w=6"):
        policy_class("chc")(w=6, v=7).check_params()


@pytest.mark.parametrize("value", [True, float("nan"), "2", -1.0])
def test_bools_strings_and_non_finite_numbers_are_never_numbers(value):
    with pytest.raises(PredictionError, match="period_hours must be a finite number of hours > 0"):
        make_predictor("seasonal_naive", period_hours=value) if not isinstance(value, str) \
            else predictor_class("seasonal_naive")(period_hours=value).check_params()


def test_resolved_params_name_every_default_so_experiment_keys_follow_them():
    from spotlab.policies.registry import resolved_params

    full = resolved_params("chc", {"w": 6})
    assert full["w"] == 6 and full["method"] == "auto" and full["v"] == 1
    assert resolved_params("select")["prefer"] == "auto"
    with pytest.raises(PolicyError, match="no parameter 'window'"):
        resolved_params("chc", {"window": 3})
