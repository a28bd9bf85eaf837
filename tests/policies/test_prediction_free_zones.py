"""A2 across zones (`prediction_free_zones`) on random markets of 1-4 zones under every rule set: it meets every
deadline the optimum meets (the Can't Be Late guard's rule sets included, which do not enforce it), never costs
less than the optimum, and on the real benchmarks a few windows run to the end."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spotlab.errors import PolicyError
from spotlab.policies.registry import make_policy
from spotlab.policies.run import run_policy
from tests.simulation.test_zones import QUICK, RULES, cases


@given(cases(), st.sampled_from(sorted(RULES)), st.sampled_from([0.0, 2.0]), st.sampled_from([0.0, 2.0]))
@QUICK
def test_every_deadline_the_optimum_meets_is_met(case, rules, reserve, confirm):
    episodes, job = case
    sem = RULES[rules]
    best = run_policy("optimal", {}, episodes, job, sem)
    a2 = run_policy("prediction_free_zones", {"reserve": reserve, "confirm": confirm}, episodes, job, sem)
    end = np.ceil(job.hard_deadline_h / episodes.slot_hours - 1e-9) * episodes.slot_hours
    ok = np.isfinite(best.completion_h) & (best.completion_h <= end + 1e-9)
    assert np.all(np.isfinite(a2.completion_h[ok]) & (a2.completion_h[ok] <= end + 1e-9))
    assert np.all(a2.cost[ok] >= best.cost[ok] - 1e-6 * np.maximum(1, best.cost[ok]))


def test_bad_parameters_are_named():
    with pytest.raises(PolicyError, match="confirm"):
        make_policy("prediction_free_zones", {"confirm": -1})
    with pytest.raises(PolicyError, match="prior_hours"):
        make_policy("prediction_free_zones", {"prior_hours": 0})


def test_on_the_benchmarks_every_deadline_is_met(dataset):
    from spotlab.experiments import zone_benchmarks as zb

    dataset(zb.LEADERBOARD_DIR + "us-east-1a_v100_1__0.json")  # skips without the data
    dataset(zb.SKYNOMAD_DIR + "us-central1-a_h100_16__full.json")
    rows = zb.run(["prediction_free_zones", "round_robin"], ["leaderboard/3_zones_same_region/0-1", "skynomad/1.5"])
    assert rows.deadline_met.all()
