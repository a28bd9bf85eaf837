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
from spotlab.policies.select import replay_members, warmup_episodes
from spotlab.policies.select_from_members import select_from_members, warmup_utilities
from spotlab.policies.semantics import Semantics
from spotlab.simulation.engine import simulate
from spotlab.simulation.slots import horizon_slots

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


@settings(max_examples=6, deadline=None, derandomize=True)
@given(seeds=st.lists(st.integers(0, 10_000), min_size=2, max_size=3), n_max=st.integers(1, 3),
       past=st.sampled_from([0, 30, 60]), net=st.sampled_from(sorted(NETS)))
def test_warm_ups_replayed_together_are_each_set_s_own(seeds, n_max, past, net):
    """The members' warm-up utilities of several sets of rounds, replayed as one stacked simulation, equal each
    set's own replay to the bit; a set without a past to warm up on has none; and `select_from_members` given
    them chooses what it chooses when it replays them itself."""
    sem = NETS[net]
    sets, job = [], None
    for k, seed in enumerate(seeds):  # traces of their own: different histories, prices and lengths of past
        market = synthetic_market(2 * past + 4 * 8 + 24, slot_hours=1.0, requested=n_max, od_price=3.0, seed=seed,
                                  regime=["calm", "volatile", "default"][k % 3])
        job = job or JobSpec(deadline_h=8, n_max=n_max, load=0.6, value_factor=0.6).job(market)
        sets.append(cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=8,
                                history_hours=(past + 8 * k) if past else 0, max_jobs=4))
    select = make_policy("select", {"pool": "quick", "n_jobs": 1}, safety_net="off")
    got = warmup_utilities(select, sets, job, sem.settings, 0, sem.safety_net, sem.give_up)
    for ep, warm in zip(sets, got):
        warm_ep = warmup_episodes(ep, horizon_slots(job, ep.slot_hours))
        if warm_ep is None:
            assert warm is None
            continue
        own = np.stack([r.utility for r in replay_members(select.members(), [warm_ep], job, sem.settings, 0,
                                                          sem.safety_net, sem.give_up)], axis=1)
        np.testing.assert_array_equal(warm, own)
        cost = np.zeros((ep.n, len(select.members())))
        completion = np.full(cost.shape, 4.0)
        args = (select, ep, job, sem.settings, cost + np.arange(cost.shape[1]), completion, np.zeros(cost.shape[1]))
        kw = {"safety_net": sem.safety_net, "give_up": sem.give_up}
        np.testing.assert_array_equal(select_from_members(*args, **kw, warm=warm).chosen,
                                      select_from_members(*args, **kw).chosen)
    if not past:
        assert all(w is None for w in got)
    else:  # stacked: more than one set had a past to warm up on
        assert sum(w is not None for w in got) >= 2


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
