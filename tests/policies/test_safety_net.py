"""The deadline safety net is a wrapper put around online policies by `make_policy`: the engine applies the
market's rules to whatever a policy proposes and nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import PolicyError
from spotlab.jobs.job import Job
from spotlab.market.market import Market
from spotlab.policies.registry import REGISTRY, make_policy
from spotlab.policies.safety_net import SafetyNet
from spotlab.simulation.engine import simulate


class Idle:
    name = "idle"

    def reset(self, ctx) -> None:
        self.ctx = ctx

    def act(self, obs):
        return np.zeros_like(obs.held_o), np.zeros_like(obs.held_s)


def no_spot(slots: int = 10) -> Market:
    return Market(np.zeros(slots, dtype=np.int64), np.full(slots, 1.0), np.full(slots, 3.0), 1.0, name="no spot")


JOB = Job(work=6.0, deadline_h=10.0, n_min=1, n_max=1, value=100.0, miss_penalty=10.0)


def test_the_engine_applies_no_net_to_an_unwrapped_policy():
    idle = Idle()
    r = simulate(idle, no_spot(), JOB)
    assert not r.done.any() and r.arrays["o"].sum() == 0
    assert idle.ctx.safety_net == "off"


@pytest.mark.parametrize("variant", ["strict", "cbl"])
def test_the_wrapper_finishes_by_the_hard_deadline_and_tells_the_policy(variant):
    idle = Idle()
    net = SafetyNet(idle, variant)
    r = simulate(net, no_spot(), JOB)
    assert r.done.all() and r.completion_h[0] <= JOB.hard_deadline_h + 1e-9
    assert idle.ctx.safety_net == variant and not idle.ctx.give_up
    report = r.policy_report
    assert report["safety_net"] == variant and 0 < report["net_override_rate"] <= 1


def test_a_policy_may_abandon_a_job_itself():
    class Quit(Idle):
        def act(self, obs):
            o, s = super().act(obs)
            return o, s, np.full(obs.active.shape, obs.t == 2)

    r = simulate(Quit(), no_spot(), JOB)
    assert r.summary()["gave_up"].all() and r.utility[0] == pytest.approx(-JOB.miss_penalty)


def test_make_policy_wraps_online_policies_only():
    for name in REGISTRY:
        p = make_policy(name, {"n_jobs": 1} if name in ("select", "optimal") else None)
        if name == "optimal":
            assert not isinstance(p, SafetyNet)
        else:
            assert isinstance(p, SafetyNet) and p.variant == "strict" and p.unwrapped.name == name
    assert not isinstance(make_policy("greedy", safety_net="off"), SafetyNet)
    assert make_policy("greedy", safety_net="cbl", give_up=True).give_up


def test_bad_nets_are_policy_errors():
    with pytest.raises(PolicyError, match="safety net must be one of"):
        make_policy("greedy", safety_net="loose")
    with pytest.raises(PolicyError, match="give_up must be true or false"):
        make_policy("greedy", give_up="yes")
    with pytest.raises(PolicyError, match="already has a safety net"):
        SafetyNet(make_policy("greedy"))


class AllSpot(Idle):
    """Asks for N_max spot GPUs every slot, however few there are."""

    name = "all_spot"

    def act(self, obs):
        return np.zeros_like(obs.held_o), np.full(obs.held_s.shape, self.ctx.job.n_max)


@pytest.mark.parametrize("variant", ["cbl", "skynomad"])
def test_the_cant_be_late_guards_keep_no_spot_request_short_of_n_max(variant):
    # one spot GPU of the two an elastic job wants: running on it alone misses; the guard must go to N_max on demand
    # (the peer's guard keeps a spot request, but its jobs are of one size)
    market = Market(np.ones(12, dtype=np.int64), np.full(12, 1.0), np.full(12, 3.0), 1.0, name="one spot GPU")
    job = Job(work=14.0, deadline_h=10.0, n_min=1, n_max=2, value=100.0, miss_penalty=10.0, overhead_h=0.5)
    r = simulate(SafetyNet(AllSpot(), variant), market, job)
    assert r.done.all() and r.completion_h[0] <= job.hard_deadline_h + 1e-9
    assert r.arrays["o"][0].max() == job.n_max
    # a job of one size keeps its spot request when the guard fires (from slot 1 on: 8 h of work left and one
    # restart need all 9 slots left), the peers' rule; spot holds here, so it finishes without on demand
    fixed = Job(work=8.5, deadline_h=10.0, n_min=1, n_max=1, value=100.0, miss_penalty=10.0, overhead_h=0.5)
    r = simulate(SafetyNet(AllSpot(), variant), market, fixed)
    assert r.done.all() and r.arrays["o"][0].sum() == 0
