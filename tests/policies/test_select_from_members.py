"""A3 made from its members' outcomes (`select_from_members`) against A3 simulated, on random markets."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError
from spotlab.experiments.setups import JobSpec
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.market.zoned_episodes import ZonedEpisodes
from spotlab.policies.registry import make_policy
from spotlab.policies.select_from_members import select_from_members
from spotlab.policies.semantics import Semantics
from spotlab.simulation.engine import simulate

NETS = {"spotlab": Semantics(), "spotlab, give up": Semantics(give_up=True), "cant-be-late": Semantics.cant_be_late()}


@st.composite
def selections(draw):
    """A random market, job, rule set, a few jobs' episodes (with or without a past to warm up on, overlapping or
    not) and a random A3 over the pool "quick" (CHC and A2 variants)."""
    n_max, deadline = draw(st.integers(1, 6)), draw(st.integers(6, 16))
    past, n_jobs = draw(st.sampled_from([0, 48])), draw(st.integers(2, 8))
    stride = draw(st.sampled_from([3, 6, 24]))  # 6: a round's outcome known before the next starts, or not
    market = synthetic_market(past + n_jobs * stride + 2 * deadline + 24, slot_hours=1.0, requested=n_max,
                              od_price=3.0, seed=draw(st.integers(0, 10_000)),
                              regime=draw(st.sampled_from(["calm", "default", "volatile"])))
    job = JobSpec(deadline_h=deadline, n_max=n_max, load=draw(st.floats(0.2, 0.9)),
                  value_factor=draw(st.sampled_from([0.0, 0.6, 1.5]))).job(market)
    episodes = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=stride, history_hours=past,
                           max_jobs=n_jobs)
    params = {"pool": "quick", "n_jobs": 1, "algorithm": draw(st.sampled_from(["flipflop", "adahedge", "exp3"])),
              "evidence": draw(st.sampled_from([0.99, None])), "prefer": draw(st.sampled_from(["auto", None])),
              "warmup": draw(st.booleans()), "seed": draw(st.integers(0, 3))}
    return job, episodes, NETS[draw(st.sampled_from(sorted(NETS)))], params, draw(st.integers(0, 3))


@settings(max_examples=12, deadline=None, derandomize=True)
@given(case=selections())
def test_a3_from_its_members_outcomes_is_a3_simulated(case):
    """The members simulated on their own, then `select_from_members`, choose what the simulated A3 chooses, and
    the chosen member's outcome is A3's: cost, completion and the fallback rate its report gives."""
    job, episodes, sem, params, seed = case
    policy = make_policy("select", params, safety_net=sem.safety_net, give_up=sem.give_up)
    res = simulate(policy, episodes, job, sem.settings, seed=seed)
    select = policy.unwrapped
    runs = [simulate(sem.policy(n, p), episodes, job, sem.settings, seed=seed) for n, p in select.members()]
    cost, completion = (np.stack([getattr(r, f) for r in runs], axis=1) for f in ("cost", "completion_h"))
    fallback = np.array([r.policy_report.get("fallback_rate", 0.0) for r in runs])
    got = select_from_members(make_policy("select", params, safety_net="off"), episodes, job, sem.settings, cost,
                              completion, fallback, seed=seed, safety_net=sem.safety_net, give_up=sem.give_up)
    np.testing.assert_array_equal(got.chosen, select.run_.chosen)
    rounds = np.arange(episodes.n)
    np.testing.assert_array_equal(np.array([runs[k].cost[i] for i, k in zip(rounds, got.chosen)]), res.cost)
    np.testing.assert_array_equal(np.array([runs[k].completion_h[i] for i, k in zip(rounds, got.chosen)]),
                                  res.completion_h)
    assert got.fallback_rate == res.policy_report["fallback_rate"]


def test_bad_outcomes_are_one_clear_error():
    market = synthetic_market(96, slot_hours=1.0, requested=2, seed=1)
    job = JobSpec(deadline_h=8, n_max=2, load=0.5).job(market)
    episodes = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=12, history_hours=0,
                           max_jobs=3)
    select = make_policy("select", {"pool": "quick"}, safety_net="off")
    ok = np.zeros((3, 5))
    with pytest.raises(PolicyError, match=r"shape \(rounds, members\) = \(3, 5\)"):
        select_from_members(select, episodes, job, Semantics().settings, ok[:, :4], ok[:, :4], np.zeros(4))
    with pytest.raises(PolicyError, match="fallback rates must be finite"):
        select_from_members(select, episodes, job, Semantics().settings, ok, ok, np.full(5, np.nan))
    with pytest.raises(PolicyError, match="one zone only"):
        select_from_members(select, ZonedEpisodes((episodes,), ("a",), ("r",)), job, Semantics().settings, ok, ok,
                            np.zeros(5))
