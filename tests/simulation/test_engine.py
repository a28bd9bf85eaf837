"""The simulator: hand-worked cases, and invariants over random markets, jobs and policies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import JobError, PolicyError, TraceError
from spotlab.jobs.job import Job, Throughput
from spotlab.market.episodes import Episodes
from spotlab.market.market import Market
from spotlab.policies.registry import make_policy
from spotlab.policies.safety_net import SafetyNet
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings


def market(avail, sp=1.0, od=3.0, dt=1.0, requested=None):
    avail = np.asarray(avail)
    return Market(avail=avail, spot_price=np.broadcast_to(sp, avail.shape), od_price=np.broadcast_to(od, avail.shape),
                  slot_hours=dt, requested=int(requested or max(1, avail.max())))


def test_overhead_carries_over_slots_and_last_slot_billing(scripted):
    # delta = 1.5 slots: slot 0 loses all, slot 1 half, then full speed; 2 units of work end at 3.5 h
    job = Job(work=2.0, deadline_h=6.0, overhead_h=1.5)
    m = market([0] * 6)
    pol = scripted([1] * 6, [0] * 6)
    r = simulate(pol, m, job)
    rec = r.records()
    assert rec["work"].tolist() == pytest.approx([0.0, 0.5, 1.0, 0.5])
    assert rec["overhead_h"].tolist() == pytest.approx([1.0, 0.5, 0.0, 0.0])
    assert r.completion_h[0] == pytest.approx(3.5)
    assert r.cost[0] == pytest.approx(3.0 * 3.5)  # fractional billing of the last slot
    full = simulate(pol, m, job, SimSettings(billing="full"))
    assert full.cost[0] == pytest.approx(3.0 * 4)
    assert r.arrays["reconfig"][0].sum() == 1


def test_preemption_loses_the_instance_not_the_work(scripted):
    job = Job(work=2.0, deadline_h=6.0, overhead_h=0.25)
    m = market([1, 1, 0, 1, 1, 1], sp=1.0)
    r = simulate(scripted([0] * 6, [1] * 6), m, job)
    rec = r.records()
    assert rec["s"].tolist() == [1, 1, 0, 1]
    assert rec["s_requested"].tolist() == [1, 1, 1, 1]
    assert rec["preempted"].tolist() == [0, 0, 1, 0]
    assert rec["work"].tolist() == pytest.approx([0.75, 1.0, 0.0, 0.25])
    assert r.completion_h[0] == pytest.approx(3.5)
    assert r.cost[0] == pytest.approx(1 + 1 + 0 + 0.5)
    assert r.arrays["reconfig"][0, :4].tolist() == [True, False, False, True]


def test_count_change_and_swap_are_reconfigurations(scripted):
    job = Job(work=100.0, deadline_h=200.0, n_min=1, n_max=4, overhead_h=0.5,
              throughput=Throughput(alpha=2.0, beta=1.0))
    m = market([4] * 200, requested=4)
    # (o, s): (0,2) start -> (0,2) same -> (1,2) count change -> (2,1) swap -> (2,1) same
    r = simulate(scripted([0, 0, 1, 2, 2], [2, 2, 2, 1, 1]), m, job)
    rc = r.arrays["reconfig"][0, :5].tolist()
    assert rc == [True, False, True, True, False]
    h = lambda n: 2 * n + 1  # noqa: E731
    assert r.arrays["work"][0, :5].tolist() == pytest.approx([h(2) * 0.5, h(2), h(3) * 0.5, h(3) * 0.5, h(3)])


def test_below_n_min_cannot_run(scripted):
    job = Job(work=10.0, deadline_h=50.0, n_min=2, n_max=4)
    m = market([1] * 50, requested=4)
    r = simulate(scripted([0], [2]), m, job, SimSettings())
    assert r.arrays["s"][0].max() == 0 and not r.done[0]


def test_policy_bugs_are_reported(scripted):
    job = Job(work=2.0, deadline_h=6.0)
    with pytest.raises(PolicyError, match="asked for 5 on-demand"):
        simulate(scripted([5], [0]), market([0] * 6), job)
    with pytest.raises(PolicyError, match="non-integer"):
        simulate(scripted([0.5], [0]), market([0] * 6), job)
    with pytest.raises(PolicyError, match="unknown policy 'nope'"):
        make_policy("nope")
    with pytest.raises(PolicyError, match="no parameter 'bogus'"):
        make_policy("greedy", {"bogus": 1})


def test_impossible_deadline_and_short_trace_are_errors():
    with pytest.raises(JobError, match="impossible deadline"):
        simulate(make_policy("greedy"), market([1] * 10), Job(work=10.0, deadline_h=9.0, overhead_h=0.5))
    with pytest.raises(TraceError, match="hard deadline needs 12 slots"):
        simulate(make_policy("greedy"), market([1] * 10), Job(work=2.0, deadline_h=12.0))


def test_windows_in_lockstep_equal_one_by_one():
    rng = np.random.default_rng(3)
    m = market(rng.integers(0, 3, 400), sp=rng.uniform(0.5, 1.5, 400), requested=2)
    job = Job(work=30.0, deadline_h=40.0, hard_deadline_h=50.0, n_max=2, overhead_h=0.3, value=100.0)
    starts = np.arange(0, 300, 37)
    ep = Episodes.from_windows(m, starts, starts + 60)
    for name in ("greedy", "uniform_progress", "on_demand"):
        together = simulate(make_policy(name), ep, job)
        alone = [simulate(make_policy(name), m.window(a, a + 60), job) for a in starts]
        assert together.cost == pytest.approx([x.cost[0] for x in alone])
        assert together.completion_h == pytest.approx([x.completion_h[0] for x in alone], nan_ok=True)


class RandomPolicy:
    """Arbitrary valid requests: the worst a policy can do without raising."""

    name = "random"

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def reset(self, ctx):
        self.job_ = ctx.job
        self.w_ = ctx.episodes.n

    def act(self, obs):
        n = self.rng.integers(0, self.job_.n_max + 1, self.w_)
        s = self.rng.integers(0, n + 1)
        return n - s, s


@st.composite
def scenarios(draw):
    T = draw(st.integers(8, 40))
    n_max = draw(st.integers(1, 4))
    n_min = draw(st.integers(1, n_max))
    dt = draw(st.sampled_from([0.25, 0.5, 1.0]))
    delta = draw(st.sampled_from([0.0, 0.1, 0.3, 0.75, 1.6]))
    alpha = draw(st.floats(0.5, 2.0))
    beta = draw(st.floats(0.0, 1.0))
    horizon_h = T * dt
    rate = alpha * n_max + beta
    max_work = max(0.05, (horizon_h - delta - dt) * rate)
    work = draw(st.floats(0.05, max_work))
    hard = draw(st.floats(min(horizon_h, work / rate + delta + dt), horizon_h))
    soft = draw(st.floats(min(hard, work / rate + delta + dt) * 0.5, hard))
    W = draw(st.integers(1, 3))
    avail = np.array(draw(st.lists(st.integers(0, n_max + 1), min_size=T * W, max_size=T * W))).reshape(W, T)
    prices = np.array(draw(st.lists(st.floats(0.0, 5.0), min_size=T * W, max_size=T * W))).reshape(W, T)
    job = Job(work=work, deadline_h=soft, hard_deadline_h=hard, n_min=n_min, n_max=n_max, overhead_h=delta,
              throughput=Throughput(alpha=alpha, beta=beta), value=draw(st.floats(0, 100)), miss_penalty=10.0)
    markets = [Market(avail=avail[i], spot_price=prices[i], od_price=4.0, slot_hours=dt, requested=n_max + 1)
               for i in range(W)]
    return job, markets, draw(st.sampled_from(["fractional", "full"])), draw(st.integers(0, 2**16))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_invariants_hold_for_any_policy(case):
    job, markets, billing, seed = case
    try:
        job.check_feasible(markets[0].slot_hours)
    except JobError:
        return
    dt = markets[0].slot_hours
    for policy in (SafetyNet(RandomPolicy(seed)), make_policy("greedy"), make_policy("uniform_progress")):
        r = simulate(policy, markets, job, SimSettings(billing=billing))
        a = r.arrays
        alive = a["alive"]
        # availability and the GPU range are never exceeded
        assert np.all(a["s"] <= a["avail"])
        n = a["o"] + a["s"]
        assert np.all(n <= job.n_max) and np.all((n == 0) | (n >= job.n_min))
        # work: never more than H(n) per slot, and exactly L once done
        assert np.all(a["work"] <= job.throughput(n) * dt + 1e-9)
        total = a["work"].sum(axis=1)
        assert np.allclose(total[r.done], job.work)
        assert np.all(total[~r.done] < job.work + 1e-9)
        # cost: every GPU billed for the slot (or the used part of the finishing slot)
        price = a["o"] * a["od_price"] + a["s"] * a["spot_price"]
        assert np.allclose(r.cost, np.nansum(np.where(alive, price * a["billed_h"], 0.0), axis=1))
        if billing == "full":
            assert np.allclose(a["billed_h"][n > 0], dt)
        # the safety net finishes every feasible job by its hard deadline, whatever the policy asks
        assert r.done.all(), f"{policy.name} missed a feasible hard deadline"
        assert np.all(r.completion_h <= job.hard_deadline_h + 1e-9)
        assert np.allclose(r.value, job.value_at(r.completion_h))
