"""A2, the prediction-free policy: hand-worked slots, invariants over random markets and jobs, its limits
(on-demand-first and greedy-like), parameter errors and the command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.cli.main import main
from spotlab.errors import JobError, PolicyError
from spotlab.jobs.job import Job, Throughput
from spotlab.market.load import load_market
from spotlab.market.market import Market
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.policies.prediction_free import PredictionFree
from spotlab.policies.registry import make_policy
from spotlab.policies.safety_net import SafetyNet
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings


def guarded(**params):
    """A2 as `make_policy` runs it: inside the strict safety net."""
    return SafetyNet(PredictionFree(**params))


def market(avail, sp=1.0, od=3.0, dt=1.0, requested=None):
    avail = np.asarray(avail)
    return Market(avail=avail, spot_price=np.broadcast_to(sp, avail.shape), od_price=np.broadcast_to(od, avail.shape),
                  slot_hours=dt, requested=int(requested or max(1, avail.max())))


def schedule(result, slots):
    a = result.arrays
    return a["o"][0, :slots].tolist(), a["s"][0, :slots].tolist()


# --- hand-worked cases -------------------------------------------------------------------------------------

def test_cheap_spot_is_taken_up_to_n_max():
    job = Job(work=6.0, deadline_h=20.0, n_min=1, n_max=2, overhead_h=0.0)
    r = simulate(make_policy("prediction_free"), market([3] * 20, sp=1.0, od=3.0), job)  # 1/3 <= 0.6
    assert schedule(r, 3) == ([0, 0, 0], [2, 2, 2])
    assert r.completion_h[0] == pytest.approx(3.0)


def test_expensive_spot_ahead_of_the_line_idles_then_on_demand_when_behind():
    # work 10 on 1 GPU, line 10 * t / 20 (sigma = 1, d = 20): 0.5 per hour, checked at the start of each
    # slot. Spot is cheap for 3 slots, then dear (2.5 / 3 > 0.6). After 3 slots done = 3; the line at
    # slots 3..6 is 1.5..3 -> idle; at slot 7 it is 3.5 > 3 -> behind -> on-demand; from slot 8 on spot
    # stays dear, so the job stays on on-demand (it leaves only for cheap spot) and finishes in slot 13.
    job = Job(work=10.0, deadline_h=20.0, overhead_h=0.0)
    sp = [0.5] * 3 + [2.5] * 17
    r = simulate(guarded(theta=0.6, sigma=1.0), market([1] * 20, sp=sp), job)
    assert schedule(r, 10) == ([0, 0, 0, 0, 0, 0, 0, 1, 1, 1], [1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    assert r.completion_h[0] == pytest.approx(14.0)


def test_behind_the_line_runs_n_max_with_spot_first():
    # work 90 on H(4) = 4 per hour, line 90 * t / 24 (sigma 0.8 * d 30) = 3.75 per hour. Slot 0 starts on
    # the line (not behind); from slot 1 on the job is behind.
    job = Job(work=90.0, deadline_h=30.0, n_min=2, n_max=4, overhead_h=0.0)
    # spot cheap and 2 obtainable: spot alone in slot 0, then topped up to 4 with 2 on-demand GPUs
    a2 = guarded(theta=0.6, sigma=0.8)
    cheap = simulate(a2, market([2] * 30, sp=1.0, requested=4), job)
    assert schedule(cheap, 3) == ([0, 2, 2], [2, 2, 2])
    # spot dear: idle in slot 0, then 4 on-demand
    dear = simulate(a2, market([2] * 30, sp=2.9, requested=4), job)
    assert schedule(dear, 3) == ([0, 4, 4], [0, 0, 0])
    # fewer than N_min spot GPUs: not a deal at any price
    few = simulate(a2, market([1] * 30, sp=0.1, requested=4), job)
    assert schedule(few, 3) == ([0, 4, 4], [0, 0, 0])


def test_hysteresis_keeps_on_demand_through_a_short_spot_window():
    # Line 10 * t / 40 = 0.25 per hour. No spot in slots 0-2: idle on the line in slot 0, behind in slot 1
    # -> on-demand (restart 0.5 h, done 0.5); slot 2: done 0.5 = line, not ahead -> stay (done 1.5).
    # Cheap spot for one slot only (slot 3, line 0.75). With hysteresis_h = 4 h ahead of the line
    # (4 * 0.25 = 1 unit) leaving needs done > 1.75: stay, and spot never returns. Without hysteresis
    # the job jumps to spot in slot 3, paying a restart, and idles once it is gone.
    job = Job(work=10.0, deadline_h=40.0, overhead_h=0.5)
    m = market([0, 0, 0, 1] + [0] * 36, sp=0.5)
    held = simulate(guarded(sigma=1.0, hysteresis_h=4.0), m, job)
    assert schedule(held, 5) == ([0, 1, 1, 1, 1], [0, 0, 0, 0, 0])
    jumpy = simulate(guarded(sigma=1.0, hysteresis_h=0.0), m, job)
    assert schedule(jumpy, 5) == ([0, 1, 1, 0, 0], [0, 0, 0, 1, 0])
    assert held.arrays["reconfig"][0, :5].sum() == 1 and jumpy.arrays["reconfig"][0, :5].sum() == 2
    # default hysteresis 2 * delta = 1 h ahead of the line (0.25 units): slot 2 done 0.5 = line -> stay;
    # slot 3 done 1.5 > 0.75 + 0.25 and spot cheap -> leave on-demand for spot
    r = simulate(guarded(sigma=1.0), market([0, 0] + [1] * 38, sp=0.5), job)
    assert schedule(r, 5) == ([0, 1, 1, 0, 0], [0, 0, 0, 1, 1])


def test_behind_the_line_a_partial_allocation_is_topped_up_to_n_max():
    # H(n) = n, N 2..4, no overhead. Spot (2 GPUs, cheap) in slots 0-1 only.
    # Work 100 by d = 30: line 10/3 per hour. Slot 0 on the line: spot alone (done 2); slot 1 behind: 2 spot
    # + 2 on-demand (done 6); slot 2 spot gone while behind (line 6.67): the restart is due, so 4 on-demand
    # GPUs, not the 2 that survived.
    job = Job(work=100.0, deadline_h=30.0, n_min=2, n_max=4, overhead_h=0.0)
    r = simulate(make_policy("prediction_free"), market([2, 2] + [0] * 28, requested=4), job)
    assert schedule(r, 4) == ([0, 2, 4, 4], [2, 2, 0, 0])
    # Work 90: line 3 per hour. Spot in slots 0-2; slots 3-4 on the 2 surviving on-demand GPUs are on or
    # ahead of the line (done 10, 12); slot 5 behind (14 < 15): not kept on 2 GPUs, 4 on-demand.
    job = Job(work=90.0, deadline_h=30.0, n_min=2, n_max=4, overhead_h=0.0)
    r = simulate(make_policy("prediction_free"), market([2, 2, 2] + [0] * 27, requested=4), job)
    assert schedule(r, 7) == ([0, 2, 2, 2, 2, 4, 4], [2, 2, 2, 0, 0, 0, 0])
    assert r.completion_h[0] == pytest.approx(24.0)


def test_survivors_below_n_min_on_the_line_are_let_go():
    # H(n) = n, N 3..4, no overhead; work 140 by d = 40: line 3.5 per hour. Slot 0 on the line: 3 cheap spot
    # GPUs (done 3); slot 1 behind (3 < 3.5): 3 spot + 1 on-demand (done 7); slot 2 spot falls to 1: 1 spot
    # + 1 on-demand survive, too few to run, and the job is on its line (7 = 7): nothing is owed to the line,
    # so it idles (topping up to 4 would buy progress ahead of it); slot 3 behind: 4 on-demand GPUs.
    job = Job(work=140.0, deadline_h=40.0, n_min=3, n_max=4, overhead_h=0.0)
    r = simulate(make_policy("prediction_free"), market([3, 3, 1] + [0] * 37, requested=4), job)
    assert schedule(r, 4) == ([0, 1, 0, 4], [3, 3, 0, 0])
    # work 152 (line 3.8 per hour): in slot 2 the job is behind (7 < 7.6), so the survivors are topped up to N_max
    job = Job(work=152.0, deadline_h=40.0, n_min=3, n_max=4, overhead_h=0.0)
    r = simulate(make_policy("prediction_free"), market([3, 3, 1] + [0] * 37, requested=4), job)
    assert schedule(r, 4) == ([0, 1, 3, 4], [3, 3, 1, 0])


def test_spot_count_grows_only_when_the_restart_pays_back():
    # 2 spot GPUs, then 3 obtainable. Growing costs delta = 0.5 h: worth it iff R/2 > 0.5 + R/3, i.e. R > 3.
    m = market([2] + [3] * 99, sp=0.5, requested=4)
    small = Job(work=3.5, deadline_h=100.0, n_min=1, n_max=4, overhead_h=0.5)  # R = 2.5 after slot 0
    big = Job(work=20.0, deadline_h=100.0, n_min=1, n_max=4, overhead_h=0.5)  # R = 19
    assert schedule(simulate(guarded(sigma=1.0), m, small), 3)[1] == [2, 2, 2]
    assert schedule(simulate(guarded(sigma=1.0), m, big), 3)[1] == [2, 3, 3]
    # availability dropping below the held count is a preemption: take what is left
    drop = simulate(guarded(sigma=1.0), market([3, 3, 2, 2] + [3] * 96, sp=0.5, requested=4), big)
    assert schedule(drop, 4)[1] == [3, 3, 2, 2]


# --- invariants over random markets, jobs and parameters ---------------------------------------------------

class Recorder:
    """Passes a policy through and keeps what it asked for (before the safety net) and what it saw."""

    def __init__(self, policy):
        self.policy, self.name, self.log = policy, policy.name, []

    def reset(self, ctx):
        self.policy.reset(ctx)

    def act(self, obs):
        o, s = self.policy.act(obs)
        self.log.append((obs.active.copy(), obs.avail.copy(), np.asarray(o).copy(), np.asarray(s).copy()))
        return o, s


@st.composite
def cases(draw):
    n_max = draw(st.integers(1, 5))
    n_min = draw(st.integers(1, n_max))
    dt = draw(st.sampled_from([0.25, 0.5, 1.0]))
    T = draw(st.integers(8, 48))
    delta = draw(st.sampled_from([0.0, 0.1, 0.3, 0.75, 1.6]))
    alpha = draw(st.floats(0.5, 2.0))
    beta = draw(st.floats(0.0, 1.0))
    rate = alpha * n_max + beta
    horizon_h = T * dt
    work = draw(st.floats(0.05, max(0.05, (horizon_h - delta - dt) * rate)))
    hard = draw(st.floats(min(horizon_h, work / rate + delta + dt), horizon_h))
    soft = draw(st.floats(max(dt, 0.3 * hard), hard))
    job = Job(work=work, deadline_h=soft, hard_deadline_h=hard, n_min=n_min, n_max=n_max, overhead_h=delta,
              throughput=Throughput(alpha=alpha, beta=beta), value=draw(st.floats(0, 100)), miss_penalty=50.0)
    W = draw(st.integers(1, 3))
    if draw(st.booleans()):
        regime = draw(st.sampled_from(["calm", "default", "volatile"]))
        seed = draw(st.integers(0, 2**16))
        markets = [synthetic_market(horizon_h, dt, requested=n_max + 1, regime=regime, seed=seed + i)
                   for i in range(W)]
    else:
        avail = draw(st.lists(st.integers(0, n_max + 1), min_size=T * W, max_size=T * W))
        price = draw(st.lists(st.floats(0.0, 5.0), min_size=T * W, max_size=T * W))
        markets = [Market(avail=np.array(avail[i * T:(i + 1) * T]), spot_price=np.array(price[i * T:(i + 1) * T]),
                          od_price=3.0, slot_hours=dt, requested=n_max + 1) for i in range(W)]
    policy = PredictionFree(theta=draw(st.floats(0.0, 3.0)), sigma=draw(st.floats(0.01, 1.0)),
                            hysteresis_h=draw(st.one_of(st.none(), st.floats(0.0, 5.0))))
    return job, markets, policy, draw(st.sampled_from(["fractional", "full"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_feasible_jobs_meet_the_hard_deadline_within_availability_and_range(case):
    job, markets, policy, billing = case
    try:
        job.check_feasible(markets[0].slot_hours)
    except JobError:
        return
    rec = Recorder(policy)
    r = simulate(SafetyNet(rec), markets, job, SimSettings(billing=billing))
    a = r.arrays
    assert r.done.all() and np.all(r.completion_h <= job.hard_deadline_h + 1e-9)
    assert np.all(a["s"] <= a["avail"]) and np.all(a["s_requested"] <= a["avail"])
    n = a["o"] + a["s"]
    assert np.all((n >= 0) & (n <= job.n_max)) and np.all((n == 0) | (n >= job.n_min))
    # the policy's own requests, before the net: idle or N_min..N_max, spot within what is obtainable
    for active, avail, o, s in rec.log:
        o, s = o[active], s[active]
        assert np.all(o >= 0) and np.all(s >= 0) and np.all(s <= avail[active])
        assert np.all((o + s == 0) | ((o + s >= job.n_min) & (o + s <= job.n_max)))


# --- limits: on-demand-first and greedy-like ---------------------------------------------------------------

JOB = Job(work=60.0, deadline_h=40.0, hard_deadline_h=48.0, n_min=2, n_max=4, throughput=Throughput(1.0, 0.5),
          overhead_h=0.3, value=400.0, miss_penalty=200.0)


def synthetic(regime, seeds, hours=60.0, requested=6):
    return [synthetic_market(hours, 1.0, requested=requested, regime=regime, seed=s) for s in seeds]


@pytest.mark.parametrize("regime", ["calm", "volatile"])
def test_theta_zero_and_tiny_sigma_is_on_demand_first(regime):
    """theta = 0 never finds spot cheap (synthetic prices are > 0) and a line ending at 1e-6 * d is
    above the work from slot 1 on, so the policy idles in slot 0 (the job starts on the line) and then
    runs N_max on-demand GPUs to the end: on_demand's schedule one slot later, at the same cost."""
    ms = synthetic(regime, range(6))
    pf = simulate(guarded(theta=0.0, sigma=1e-6), ms, JOB)
    od = simulate(make_policy("on_demand"), ms, JOB)
    assert pf.arrays["s"].sum() == 0 and np.all(pf.arrays["o"][:, 0] == 0)
    assert np.array_equal(pf.arrays["o"][:, 1:], od.arrays["o"][:, :-1])
    assert pf.cost == pytest.approx(od.cost)
    assert pf.completion_h == pytest.approx(od.completion_h + 1.0)
    assert pf.utility == pytest.approx(od.utility)  # both finish by d here


def test_huge_theta_is_greedy_when_spot_covers_n_max():
    """With theta huge every price is cheap; when N_max spot GPUs are always obtainable both policies
    run them from slot 0 to the end, so schedules and utilities are identical whatever the prices."""
    rng = np.random.default_rng(7)
    ms = [market(rng.integers(4, 7, 60), sp=rng.uniform(0.1, 6.0, 60), requested=6) for _ in range(5)]
    pf = simulate(guarded(theta=1e9), ms, JOB)
    gr = simulate(make_policy("greedy"), ms, JOB)
    assert pf.utility == pytest.approx(gr.utility)
    assert np.array_equal(pf.arrays["s"], gr.arrays["s"]) and pf.arrays["o"].sum() == 0


@pytest.mark.parametrize("n_range, delta", [((1, 1), 0.3), ((2, 4), 0.0)])
def test_huge_theta_matches_greedy_except_where_the_line_buys_on_demand(n_range, delta):
    """On synthetic markets with spot outages, theta huge makes A2 price-insensitive: its spot choices are
    Greedy's (take min(a_t, N_max)), with the count rule inactive (one GPU, or delta = 0 where growing is
    free). The two differ only where A2 fell behind its line and paid for on-demand GPUs while Greedy
    waited for spot until its deadline rules forced it; there A2 usually finishes earlier at a higher cost.
    So: every window where neither used on-demand has the same schedule and utility as Greedy."""
    job = Job(work=30.0, deadline_h=40.0, hard_deadline_h=48.0, n_min=n_range[0], n_max=n_range[1],
              overhead_h=delta, value=400.0, miss_penalty=200.0)
    ms = synthetic("default", range(12), requested=n_range[1] + 1)
    pf = simulate(guarded(theta=1e9, sigma=1.0), ms, job)
    gr = simulate(make_policy("greedy"), ms, job)
    no_od = (pf.arrays["o"].sum(axis=1) == 0) & (gr.arrays["o"].sum(axis=1) == 0)
    assert no_od.sum() >= 3, "the comparison needs windows that spot alone finishes"
    assert pf.utility[no_od] == pytest.approx(gr.utility[no_od])
    assert np.array_equal(pf.arrays["s"][no_od], gr.arrays["s"][no_od])
    differ = ~np.isclose(pf.utility, gr.utility)
    assert np.all(pf.arrays["o"][differ].sum(axis=1) + gr.arrays["o"][differ].sum(axis=1) > 0)


# --- parameters ----------------------------------------------------------------------------------------------

def test_parameters_are_stored_unchanged_and_listed():
    p = make_policy("prediction_free", {"theta": "0.5", "hysteresis_h": "none"})
    assert p.get_params() == {"theta": 0.5, "sigma": 1.0, "hysteresis_h": None}
    assert make_policy("prediction_free", {"hysteresis_h": "1.5"}).hysteresis_h == 1.5
    assert p.name == "prediction_free" and p.online and isinstance(p, SafetyNet) and p.variant == "strict"


@pytest.mark.parametrize("params, message", [
    ({"theta": -0.1}, "theta must be a finite number >= 0"),
    ({"theta": float("nan")}, "theta must be a finite number >= 0"),
    ({"theta": float("inf")}, "theta must be a finite number >= 0"),
    ({"theta": "cheap"}, "theta must be a finite number >= 0"),
    ({"sigma": 0.0}, r"sigma must be a finite number in \(0, 1\]"),
    ({"sigma": 1.2}, r"sigma must be a finite number in \(0, 1\]"),
    ({"sigma": float("nan")}, r"sigma must be a finite number in \(0, 1\]"),
    ({"hysteresis_h": -1.0}, "hysteresis_h must be None or a finite number >= 0"),
    ({"hysteresis_h": float("inf")}, "hysteresis_h must be None or a finite number >= 0"),
])
def test_bad_parameters_are_policy_errors(params, message):
    with pytest.raises(PolicyError, match=message):
        simulate(guarded(**params), market([1] * 10), Job(work=2.0, deadline_h=8.0))


def test_unknown_or_unparsable_parameters_from_the_registry():
    with pytest.raises(PolicyError, match="no parameter 'tau'.*theta=1.0, sigma=1.0, hysteresis_h=None"):
        make_policy("prediction_free", {"tau": 1})
    with pytest.raises(PolicyError, match="parameter sigma='high' is not a valid"):
        make_policy("prediction_free", {"sigma": "high"})


def test_command_line(tmp_path, capsys):
    m = synthetic_market(48, 1.0, requested=4, seed=3)
    p = tmp_path / "m.csv"
    pd.DataFrame({"time": pd.date_range("2025-01-01", periods=len(m), freq="h", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "cloud": "syn", "zone": "z", "gpu": "A100", "requested": 4, "available": m.avail,
                  "spot_price": m.spot_price, "on_demand_price": m.od_price}).to_csv(p, index=False)
    args = ["simulate", "--trace", str(p), "--policy", "prediction_free", "--param", "theta=0.5", "--param",
            "sigma=0.9", "--work-hours", "40", "--deadline-hours", "30", "--hard-deadline-hours", "36",
            "--gpus-min", "2", "--gpus-max", "4", "--restart-overhead-hours", "0.2", "--safety-net", "strict",
            "--json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "prediction_free"
    assert out["params"]["theta"] == 0.5 and out["params"]["sigma"] == 0.9
    assert out["hard_deadline_met_fraction"] == 1.0 and out["mean_cost"] > 0


# --- the defaults on jobs and markets they were not tuned on ------------------------------------------------

@st.composite
def unseen_jobs(draw):
    """A random job (1-8 GPUs, beta < 0 or > 0, cost-only or valued, restart overhead up to 0.3 slot, hard
    deadline up to 1.5 d) and 4 windows of a synthetic market."""
    n_max = draw(st.integers(1, 8))
    n_min = draw(st.integers(1, n_max))
    alpha = draw(st.floats(0.5, 2.0))
    beta = draw(st.floats(-0.3 * alpha * n_min, 1.0))
    delta = draw(st.sampled_from([0.0, 0.1, 0.3]))
    d = draw(st.floats(8.0, 48.0))
    hard = d * draw(st.sampled_from([1.0, 1.25, 1.5]))
    rate = alpha * n_max + beta
    work = draw(st.floats(0.2, 0.95)) * (d - delta - 1.0) * rate
    od_cost = work / rate * n_max * 3.0
    value = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])) * od_cost
    miss = draw(st.sampled_from([0.0, 1.0])) * max(value, od_cost)
    job = Job(work=work, deadline_h=d, hard_deadline_h=hard, n_min=n_min, n_max=n_max, overhead_h=delta,
              throughput=Throughput(alpha=alpha, beta=beta), value=value, miss_penalty=miss)
    regime = draw(st.sampled_from(["calm", "default", "volatile"]))
    seed = draw(st.integers(0, 2**16))
    markets = [synthetic_market(hard + 2, 1.0, requested=n_max + 1, regime=regime, seed=seed + k) for k in range(4)]
    return job, markets, od_cost


def _mean_utilities(job, markets):
    a2 = simulate(make_policy("prediction_free"), markets, job).utility.mean()
    up = simulate(make_policy("uniform_progress"), markets, job).utility.mean()
    return a2, up


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(unseen_jobs())
def test_defaults_are_not_worse_than_uniform_progress_on_random_jobs(case):
    """A2 with its defaults against Uniform Progress on the same windows: never worse by more than 2% of the
    all-on-demand cost (the no-flapping and restart-keeping rules can lose a little where every restart
    would have paid off)."""
    job, markets, od_cost = case
    try:
        job.check_feasible(1.0)
    except JobError:
        return
    a2, up = _mean_utilities(job, markets)
    assert a2 >= up - 0.02 * od_cost


def test_defaults_beat_uniform_progress_on_average_over_random_jobs():
    """Over a seeded sample of such jobs the defaults gain on average (they avoid spot dearer than
    on-demand, aim cost-only jobs at the hard deadline and keep restarts down)."""
    gains = []
    rng = np.random.default_rng(11)
    for _ in range(40):
        n_max = int(rng.integers(1, 9))
        n_min = int(rng.integers(1, n_max + 1))
        alpha = rng.uniform(0.5, 2.0)
        beta = rng.uniform(-0.3 * alpha * n_min, 1.0)
        delta = float(rng.choice([0.0, 0.1, 0.3]))
        d = rng.uniform(8.0, 48.0)
        hard = d * float(rng.choice([1.0, 1.25, 1.5]))
        rate = alpha * n_max + beta
        work = rng.uniform(0.2, 0.95) * (d - delta - 1.0) * rate
        od_cost = work / rate * n_max * 3.0
        value = float(rng.choice([0.0, 1.0, 2.0])) * od_cost
        job = Job(work=work, deadline_h=d, hard_deadline_h=hard, n_min=n_min, n_max=n_max, overhead_h=delta,
                  throughput=Throughput(alpha=alpha, beta=beta), value=value, miss_penalty=value)
        try:
            job.check_feasible(1.0)
        except JobError:
            continue
        regime = str(rng.choice(["calm", "default", "volatile"]))
        seed = int(rng.integers(0, 2**16))
        ms = [synthetic_market(hard + 2, 1.0, requested=n_max + 1, regime=regime, seed=seed + k) for k in range(4)]
        a2, up = _mean_utilities(job, ms)
        gains.append((a2 - up) / od_cost)
    assert len(gains) >= 30
    assert np.mean(gains) > 0 and np.min(gains) > -0.02


# zones that no notebook uses (they use us-central1-a, us-east4-b, asia-south2-b of the H100 probes)
HELD_OUT = [
    ("markets/gcp_h100_probes.csv.gz", "europe-west3-c"),
    ("markets/gcp_h100_probes.csv.gz", "us-west1-a"),
    ("markets/aws_v100_p3.2xlarge.csv.gz", "us-east-2a"),
]


@pytest.mark.parametrize("relpath, zone", HELD_OUT, ids=[z for _, z in HELD_OUT])
def test_defaults_at_least_uniform_progress_on_held_out_real_zones(dataset, relpath, zone):
    """The job of issue 11 (96 GPU-hours on 1-8 GPUs, H(n) = n - 0.2, soft 24 h, hard 36 h, 0.1 h restarts,
    value 400, miss penalty 400, a job every 12 h) on H100 zones; a cost-only 48 h single-GPU job with a 60 h
    deadline on a V100 zone."""
    pass
    from spotlab.jobs.job import make_job

    if "h100" in relpath:
        job = make_job(96, 24, hard_deadline_hours=36, gpus_min=1, gpus_max=8, alpha=1.0, beta=-0.2,
                       overhead_hours=0.1, value=400, miss_penalty=400)
    else:
        job = make_job(48, 60, overhead_hours=0.1)
    ep = cut_windows(load_market(dataset(relpath), zone=zone, slot_hours=1.0), stride_hours=12,
                     horizon_hours=job.hard_deadline_h, skip_hours=0)
    a2 = simulate(make_policy("prediction_free"), ep, job)
    up = simulate(make_policy("uniform_progress"), ep, job)
    assert a2.utility.mean() >= up.utility.mean() - 0.01 * abs(up.utility.mean()) - 1e-6
    assert a2.met_hard_deadline.all()
