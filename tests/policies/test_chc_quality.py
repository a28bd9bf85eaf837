"""A1 with perfect forecasts against the optimum, on random jobs and synthetic markets (issue: decisions that
hold on any job and any market).

- A window that covers the rest of the job, perfect forecasts: CHC's plan is the optimum's from the true
  state, so its utility must be the optimum's (within 1%; the optimum's schedule as the safety net lets an
  online policy run it, see `optimum`), for any value relative to the on-demand cost
  (cost-only jobs included), N_min..N_max, beta of either sign, overheads shorter or longer than a slot.
- A short window on a horizon several times longer: the plan sees only w slots and expects the rest from the
  market's past; it must stay near the optimum and not below uniform progress.
- The same at w = 12 on markets of day-long regimes (a zone empty for a day or more, then full), where the
  tail must expect spot after the window only as far as the past says a regime lasts. Expecting the
  time-of-day average after an empty window instead left 6-33% of the optimum with a 36-h job (96 GPU-h on
  1-8 GPUs, value 400) on `regime_market` seeds 0-3, below uniform progress on seed 0; 5-15% on two of
  twelve random jobs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.jobs.job import Job, Throughput
from spotlab.market.episodes import Episodes
from spotlab.market.market import Market
from spotlab.market.synthetic import synthetic_market
from spotlab.policies.registry import make_policy
from spotlab.policies.safety_net import SafetyNet
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings
from spotlab.simulation.slots import horizon_slots

OD = 3.0


def random_job(rng: np.random.Generator, max_deadline: int, n_max_hi: int = 3,
               overheads: tuple[float, ...] = (0.0, 0.25, 1.5)) -> Job:
    n_max = int(rng.integers(1, n_max_hi + 1))
    n_min = int(rng.integers(1, n_max + 1))
    beta = float(rng.uniform(-0.3, 0.5))
    tp = Throughput(1.0, beta)
    d = int(rng.integers(max(3, max_deadline // 2), max_deadline + 1))
    hard = int(np.ceil(d * rng.uniform(1.0, 1.5)))
    load = float(rng.uniform(0.2, 0.85))
    work = load * d * float(tp(n_max))
    od_cost = work / float(tp(n_max)) * n_max * OD
    value = float(rng.choice([0.0, 0.5, 1.0, 3.0])) * od_cost
    penalty = float(rng.choice([0.0, 0.5])) * value
    overhead = float(rng.choice(list(overheads)))
    job = Job(work=work, deadline_h=float(d), hard_deadline_h=float(hard), n_min=n_min, n_max=n_max,
              throughput=tp, value=value, miss_penalty=penalty, overhead_h=overhead)
    return job


def episodes_for(job: Job, rng: np.random.Generator) -> Episodes:
    regime = str(rng.choice(["calm", "default", "volatile"]))
    mk = synthetic_market(24 * 9, requested=4, od_price=OD, regime=regime, seed=int(rng.integers(1_000_000)))
    start = 24 * 7 + int(rng.integers(0, 24))
    return Episodes.from_windows(mk, [start], [start + horizon_slots(job, 1.0)], history=24 * 7)


def feasible(job: Job) -> bool:
    try:
        job.check_feasible(1.0)
    except Exception:
        return False
    return True


def optimum(job: Job, ep: Episodes) -> float:
    """The optimum's utility as an online policy can reach it: its schedule (perfect foresight) played
    through the strict safety net. Where the deadline is so tight that only foresight can risk spot (the net
    must then insure against preemption with on-demand GPUs), the net changes it; elsewhere it is the optimum."""
    params = {"mip_gap": 1e-6, "n_jobs": 1}
    res = simulate(make_policy("optimal", params), ep, job, SimSettings())
    netted = simulate(make_policy("optimal_netted", params), ep, job)
    return float(min(res.utility[0], netted.utility[0]))


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(seed=st.integers(0, 2**31 - 1))
def test_whole_horizon_chc_with_perfect_forecasts_is_the_optimum(seed):
    rng = np.random.default_rng(seed)
    job = random_job(rng, max_deadline=8)
    if not feasible(job):
        return
    ep = episodes_for(job, rng)
    best = optimum(job, ep)
    chc = simulate(make_policy("chc", {"w": horizon_slots(job, 1.0), "predictor": "oracle", "solver": "highs",
                                       "mip_gap": 1e-6, "time_limit": 60.0}), ep, job)
    got = float(chc.utility[0])
    assert chc.policy_report["fallback_rate"] == 0.0
    assert chc.met_hard_deadline.all()
    assert got >= best - 0.01 * abs(best) - 1e-6, (job, best, got)


def valued_case(rng: np.random.Generator, value_share: float, **job_kw) -> tuple[Job, Episodes, float, float] | None:
    """A random job worth `value_share` x its all-on-demand cost (penalty 0 or 0.3 x the value), a market, the
    optimum that may leave the job unfinished (as far as a guarded policy with give-up can follow it) and the
    job's all-on-demand cost; None if the job cannot finish at all."""
    job = random_job(rng, **job_kw)
    scale = job.work / float(job.max_rate) * job.n_max * OD
    job = replace(job, value=value_share * scale, miss_penalty=float(rng.choice([0.0, 0.3])) * value_share * scale)
    if not feasible(job):
        return None
    ep = episodes_for(job, rng)
    params = {"mip_gap": 1e-6, "n_jobs": 1, "must_finish": False}
    best = float(min(simulate(make_policy("optimal", params), ep, job).utility[0],
                     simulate(make_policy("optimal_netted", params, give_up=True), ep, job).utility[0]))
    return job, ep, best, scale


@settings(max_examples=15, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), value_share=st.sampled_from([0.3, 0.6, 0.9, 1.2, 3.0]))
def test_whole_horizon_chc_that_may_give_up_is_the_optimum_that_may(seed, value_share):
    """Jobs worth less than, about or more than finishing them on demand, with the net's give-up on: CHC with
    perfect forecasts over the whole job is within 1% of the optimum that may leave the job unfinished (the
    bar of the held-out check). Before the window problem knew the net's give-up, such a job with no spot in sight
    was driven to the end on on-demand GPUs."""
    case = valued_case(np.random.default_rng(seed), value_share, max_deadline=8)
    if case is None:
        return
    job, ep, best, _ = case
    chc = simulate(make_policy("chc", {"w": horizon_slots(job, 1.0), "predictor": "oracle", "solver": "highs",
                                       "mip_gap": 1e-6, "time_limit": 60.0}, give_up=True), ep, job)
    got = float(chc.utility[0])
    assert chc.policy_report["fallback_rate"] == 0.0
    assert got >= best - 0.01 * abs(best) - 1e-6, (job, best, got)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), value_share=st.sampled_from([0.3, 0.6, 0.9, 1.2, 3.0]))
def test_short_window_that_may_give_up_stays_near_the_optimum_that_may(seed, value_share):
    """The same with w = 4 on horizons of 8..20 slots: within 10% (of the optimum's utility or, where that is
    near 0, of the job's on-demand cost) of the optimum that may leave the job unfinished."""
    case = valued_case(np.random.default_rng(seed), value_share, max_deadline=14, overheads=(0.0, 0.1, 0.25))
    if case is None:
        return
    job, ep, best, scale = case
    chc = simulate(make_policy("chc", {"w": 4, "predictor": "oracle", "solver": "highs", "mip_gap": 1e-4,
                                       "time_limit": 60.0}, give_up=True), ep, job)
    got = float(chc.utility[0])
    assert chc.policy_report["fallback_rate"] == 0.0
    assert got >= best - 0.1 * max(abs(best), scale), (job, best, got)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(seed=st.integers(0, 2**31 - 1))
def test_short_window_with_perfect_forecasts_stays_near_the_optimum(seed):
    """w = 4 on horizons of 8..20 slots (the README's w = 12 on 36-slot jobs, scaled down for speed), restart
    overheads shorter than a slot. Known limit: with an overhead of 1.5 slots a 4-slot window can fall below
    uniform progress (the tail, which expects the market's average spot after the window, makes the plan
    start small and ramp up, one costly restart at a time); a window covering the job does not."""
    rng = np.random.default_rng(seed)
    job = random_job(rng, max_deadline=14, overheads=(0.0, 0.1, 0.25))
    if not feasible(job):
        return
    ep = episodes_for(job, rng)
    best = optimum(job, ep)
    chc = simulate(make_policy("chc", {"w": 4, "predictor": "oracle", "solver": "highs", "mip_gap": 1e-4,
                                       "time_limit": 60.0}), ep, job)
    up = simulate(make_policy("uniform_progress"), ep, job)
    got, base = float(chc.utility[0]), float(up.utility[0])
    scale = job.work / float(job.max_rate) * job.n_max * OD  # the job's all-on-demand cost: its money scale
    assert chc.policy_report["fallback_rate"] == 0.0
    assert chc.met_hard_deadline.all()
    assert got >= best - 0.1 * max(abs(best), scale), (job, best, got, base)
    # per job, within 5% of the job's on-demand cost of uniform progress (a single job can go either way; on
    # the real zones and the synthetic sample of the closing note CHC is above it on average)
    assert got >= base - 0.05 * scale, (job, best, got, base)


def test_cost_only_job_plans_and_finishes():
    """Value 0, no miss penalty (the Can't Be Late setting): every window solves, nothing falls back, and the
    job finishes by its deadline at no more than uniform progress's cost."""
    job = Job(work=12.0, deadline_h=16.0, n_min=1, n_max=1, overhead_h=0.25)
    mk = synthetic_market(24 * 9, requested=1, od_price=OD, regime="volatile", seed=3)
    ep = Episodes.from_windows(mk, [24 * 7, 24 * 7 + 12], [24 * 7 + 16, 24 * 7 + 28], history=24 * 7)
    chc = simulate(make_policy("chc", {"w": 6, "predictor": "oracle"}), ep, job)
    up = simulate(make_policy("uniform_progress"), ep, job)
    assert chc.policy_report["solves"] > 0 and chc.policy_report["fallback_rate"] == 0.0
    assert chc.met_hard_deadline.all()
    assert chc.cost.mean() <= up.cost.mean() + 1e-6


@pytest.mark.parametrize("net", ["strict", "cbl"])
def test_plans_within_the_net_are_not_overridden(net):
    """A whole-horizon plan with perfect forecasts is what runs: the net never changes one of its slots."""
    job = Job(work=20.0, deadline_h=10.0, hard_deadline_h=12.0, n_min=1, n_max=3, throughput=Throughput(1.0, 0.2),
              value=90.0, miss_penalty=30.0, overhead_h=0.25)
    mk = synthetic_market(24 * 9, requested=3, od_price=OD, regime="volatile", seed=11)
    ep = Episodes.from_windows(mk, [24 * 7], [24 * 7 + 12], history=24 * 7)
    pol = make_policy("chc", {"w": 12, "predictor": "oracle", "solver": "highs", "mip_gap": 1e-6}, safety_net=net)
    with_net = simulate(pol, ep, job)
    without = simulate(make_policy("chc", {"w": 12, "predictor": "oracle", "solver": "highs", "mip_gap": 1e-6}),
                       ep, job, SimSettings())
    assert with_net.utility[0] == pytest.approx(without.utility[0], abs=1e-6) or with_net.utility[0] > without.utility[0]


class Idle:
    """A policy that never runs the job: only the safety net does."""

    name = "idle"

    def reset(self, ctx) -> None:
        pass

    def act(self, obs):
        return np.zeros_like(obs.held_o), np.zeros_like(obs.held_s)


def test_give_up_stops_a_job_not_worth_finishing():
    """On-demand dearer than value + penalty: the net buys the completion by default; with give_up it stops
    the job at the last safe slot instead, which costs nothing and earns -penalty."""
    job = Job(work=8.0, deadline_h=10.0, n_min=1, n_max=1, value=5.0, miss_penalty=4.0)
    from spotlab.market.market import Market

    empty = Market(np.zeros(10, dtype=np.int64), np.full(10, 1.0), np.full(10, OD), 1.0, name="no spot")
    keep = simulate(SafetyNet(Idle()), empty, job)
    quit_ = simulate(SafetyNet(Idle(), give_up=True), empty, job)
    assert keep.done.all() and keep.utility[0] == pytest.approx(5.0 - 8.0 * OD)
    assert quit_.summary()["gave_up"].all() and not quit_.done.any()
    assert quit_.utility[0] == pytest.approx(-4.0) and quit_.cost[0] == 0.0
    worth = Job(work=8.0, deadline_h=10.0, n_min=1, n_max=1, value=30.0, miss_penalty=4.0)
    assert simulate(SafetyNet(Idle(), give_up=True), empty, worth).done.all()  # worth finishing: it finishes


def test_give_up_keeps_a_job_already_finishing_on_demand():
    """A tight job (1.5-h restarts, 1 h of slack) running on N_max on-demand GPUs from its first slot: the net
    fires while that restart is still pending, and give-up must count what is left of it, not a fresh restart,
    or the job, worth finishing and on course to finish at 6.5 h, is stopped."""
    job = Job(work=5.0, deadline_h=7.0, n_min=1, n_max=1, value=30.0, miss_penalty=1.0, overhead_h=1.5)
    from spotlab.market.market import Market

    empty = Market(np.zeros(8, dtype=np.int64), np.full(8, 1.0), np.full(8, OD), 1.0, name="no spot")
    res = simulate(SafetyNet(make_policy("on_demand", safety_net="off"), give_up=True), empty, job)
    assert res.done.all() and not res.summary()["gave_up"].any()
    assert res.completion_h[0] == pytest.approx(6.5) and res.utility[0] == pytest.approx(30.0 - 6.5 * OD)


def test_default_configurations_never_fall_back():
    """CHC and A3 with their defaults (GLPK, 1% gap, 5 s limit, real forecasters) on multi-GPU jobs of either
    kind of value: every decision is the planner's own. A fallback here means the default is too tight."""
    mk = synthetic_market(24 * 9, requested=8, od_price=OD, regime="volatile", seed=4)
    starts = np.array([24 * 7, 24 * 7 + 12])
    for value in (0.0, 150.0):
        job = Job.from_gpu_hours(30.0, 8.0, hard_deadline_h=10.0, n_min=1, n_max=8, throughput=Throughput(1.0, -0.2),
                                 value=value, miss_penalty=value / 2, overhead_h=0.1)
        ep = Episodes.from_windows(mk, starts, starts + 10, history=24 * 7)
        chc = simulate(make_policy("chc", {"predictor": "persistence"}), ep, job)
        assert chc.policy_report["fallback_rate"] == 0.0 and chc.metrics()["fallback_rate"] == 0.0
        assert chc.met_hard_deadline.all()
    short = Episodes.from_windows(mk, starts, starts + 10, history=24)  # a day of history: one warm-up job
    sel = simulate(make_policy("select", {"n_jobs": 1}), short, job)
    assert sel.policy_report["warmup_rounds"] >= 1
    assert sel.metrics()["fallback_rate"] == 0.0 and sel.met_hard_deadline.all()


def regime_market(seed: int, hours: int = 24 * 12, n: int = 8, mean_hours: float = 30.0, spot: float = 3.0,
                  od: float = 10.0, flicker: bool = False) -> Market:
    """Spot all there or all gone, in regimes of exponential length (mean `mean_hours`); `flicker`: spells
    rounded to the nearest hour (not down) with 2..n GPUs each."""
    rng = np.random.default_rng(seed)
    a = np.zeros(hours, dtype=np.int64)
    on, t = bool(rng.random() < 0.5), 0
    while t < hours:
        length = rng.exponential(mean_hours)
        d = max(1, int(round(length)) if flicker else int(length))
        a[t:t + d] = (rng.integers(2, n + 1) if flicker else n) if on else 0
        t, on = t + d, not on
    return Market(a, np.full(hours, spot), np.full(hours, od), 1.0, requested=n,
                  name=f"{'flicker' if flicker else 'regimes'} {seed}")


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_short_window_in_regimes_stays_near_the_optimum(seed):
    job = Job.from_gpu_hours(96.0, 24.0, hard_deadline_h=36.0, n_min=1, n_max=8, throughput=Throughput(1.0, -0.2),
                             value=400.0, miss_penalty=400.0, overhead_h=0.1)
    mk = regime_market(seed)
    starts = np.arange(168, len(mk) - 36 + 1, 12)
    ep = Episodes.from_windows(mk, starts, starts + 36, history=168)
    best = simulate(make_policy("optimal", {"n_jobs": 1}), ep, job).utility.mean()
    chc = simulate(make_policy("chc", {"w": 12, "predictor": "oracle"}), ep, job)
    up = simulate(make_policy("uniform_progress"), ep, job).utility.mean()
    got = float(chc.utility.mean())
    assert chc.policy_report["fallback_rate"] == 0.0
    assert got >= best - 0.1 * abs(best), (seed, best, got, up)
    assert got >= min(up, best - 0.01 * abs(best)), (seed, best, got, up)  # UP may be the optimum itself


@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_short_window_in_regimes_stays_near_the_optimum_on_random_jobs(seed):
    """Random jobs (1-8 GPUs, beta of either sign, any value, horizons of 18-54 h), jobs every 12 h after a
    week: within 10% of the optimum (plus 1% of the job's all-on-demand cost, for optima near 0) and not below
    uniform progress (1% of that cost)."""
    rng = np.random.default_rng(seed)
    job = random_job(rng, max_deadline=36, n_max_hi=8, overheads=(0.0, 0.1, 0.25))
    if not feasible(job):
        return
    assert_short_window_near_the_optimum(job, regime_market(seed, n=job.n_max, spot=1.0, od=OD))


def assert_short_window_near_the_optimum(job: Job, mk: Market) -> None:
    """CHC (w = 12, perfect window forecasts) on a job every 12 h after a week of `mk`: within 10% of the
    optimum plus 1% of the job's all-on-demand cost (for optima near 0), and not below uniform progress by more
    than that 1%."""
    H = horizon_slots(job, 1.0)
    starts = np.arange(168, len(mk) - H + 1, 12)
    ep = Episodes.from_windows(mk, starts, starts + H, history=168)
    best = simulate(make_policy("optimal", {"n_jobs": 1}), ep, job).utility.mean()
    chc = simulate(make_policy("chc", {"w": 12, "predictor": "oracle"}), ep, job)
    up = simulate(make_policy("uniform_progress"), ep, job).utility.mean()
    got = float(chc.utility.mean())
    scale = job.work / float(job.max_rate) * job.n_max * float(np.max(mk.od_price))
    assert chc.policy_report["fallback_rate"] == 0.0
    assert got >= best - 0.1 * abs(best) - 0.01 * scale, (job, best, got, up)
    assert got >= up - 0.01 * scale, (job, best, got, up)


def flicker_case(seed: int) -> tuple[Job, Episodes]:
    """A tight job (most of N_max's throughput until the soft deadline, beta > 0, 0.25-h restarts, worth about
    half its all-on-demand cost) on a flickering market, a job every 12 h after a week."""
    rng = np.random.default_rng(seed + 100)
    tp = Throughput(1.0, 0.5)
    work = float(rng.uniform(0.75, 0.9)) * 24.0 * float(tp(8))
    od_cost = work / float(tp(8)) * 8 * 10.0
    job = Job(work=work, deadline_h=24.0, hard_deadline_h=36.0, n_min=2, n_max=8, throughput=tp,
              value=float(rng.uniform(0.4, 0.8)) * od_cost, miss_penalty=0.1 * od_cost, overhead_h=0.25)
    mk = regime_market(seed, hours=24 * 10, mean_hours=2.0, flicker=True)
    starts = np.arange(168, len(mk) - 36 + 1, 12)
    return job, Episodes.from_windows(mk, starts, starts + 36, history=168)


@pytest.mark.parametrize("seed", [0, 5])
def test_short_window_on_flickering_spot_stays_near_the_optimum(seed):
    """Restarts stall the whole job: a tail that only discounted spot GPU-hours for them counted on finishing
    at full speed, deferred work and finished late (seed 5: -5.5 $/job against the optimum's 35.8, below the
    bound's 15.9; 24.3 with the tail's stalled hours; seeds 0-5 all gained). Bound as in the random-jobs test
    above."""
    job, ep = flicker_case(seed)
    best = simulate(make_policy("optimal", {"n_jobs": 1}), ep, job).utility.mean()
    chc = simulate(make_policy("chc", {"w": 12, "predictor": "oracle"}), ep, job)
    up = simulate(make_policy("uniform_progress"), ep, job).utility.mean()
    got = float(chc.utility.mean())
    scale = job.work / float(job.max_rate) * job.n_max * 10.0
    assert chc.policy_report["fallback_rate"] == 0.0
    assert got >= best - 0.1 * abs(best) - 0.01 * scale, (seed, best, got, up)
    assert got >= up, (seed, best, got, up)


@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_short_window_on_partial_spot_stays_near_the_optimum(seed):
    """Spot in regimes of 2..N_max GPUs and jobs that need more than half of N_max at once, so many hours run
    spot beside on-demand GPUs (the tail's mixed tier); any value, beta of either sign, horizons past the
    window. Bound as in the random-jobs test above."""
    rng = np.random.default_rng(seed)
    n_max = int(rng.choice([4, 6, 8]))
    tp = Throughput(1.0, float(rng.uniform(-0.3, 0.5)))
    d = float(rng.integers(24, 48))
    work = float(rng.uniform(0.3, 0.7)) * d * float(tp(n_max))
    scale = work / float(tp(n_max)) * n_max * OD
    value = float(rng.choice([0.0, rng.uniform(0.5, 1.5) * scale]))
    job = Job(work=work, deadline_h=d, hard_deadline_h=d + float(rng.integers(0, 30)),
              n_min=int(rng.integers(n_max // 2 + 1, n_max + 1)), n_max=n_max, throughput=tp, value=value,
              miss_penalty=0.3 * value, overhead_h=float(rng.choice([0.05, 0.1, 0.25])))
    assert_short_window_near_the_optimum(job, regime_market(seed, hours=24 * 12, n=n_max, spot=1.0, od=OD,
                                                           mean_hours=float(rng.uniform(6, 30)), flicker=True))


def test_no_policy_with_a_short_window_is_near_the_optimum_on_every_market():
    """The 10% bar at w = 12 is an average over markets, not a worst case: two markets that agree on their
    first 24 slots (and on their past) differ in what the first 12 slots should do. A 12-GPU-hour cost-only job
    with 36 h to finish sees spot at 0.6 x on-demand now; on market A spot comes back at 0.2 after a 12-h gap,
    on market B it never does. The optimum waits on A (2.4 $) and takes the dear spot on B (7.2 $). A policy
    seeing 12 slots ahead decides slots 0-11 from slots 0-22, the same on both, so with x hours done on spot
    there it costs at least 2.4 + 0.4x on A and 12 - 0.4x on B: within 10% needs x <= 0.6 on A and x >= 10.2
    on B. Every policy here, A1 with perfect window forecasts included, misses the bar on one of the two."""
    past = 168
    a_first = np.r_[np.ones(past + 12), np.zeros(12)]
    prices = np.r_[np.full(past + 12, 0.6), np.full(24, 0.2)]
    markets = {
        "A": Market(np.r_[a_first, np.ones(12)].astype(np.int64), prices, np.ones(past + 36), 1.0, requested=1),
        "B": Market(np.r_[a_first, np.zeros(12)].astype(np.int64), prices, np.ones(past + 36), 1.0, requested=1),
    }
    job = Job(work=12.0, deadline_h=36.0, n_min=1, n_max=1, overhead_h=0.0)
    eps = {k: Episodes.from_windows(m, [past], [past + 36], history=past) for k, m in markets.items()}
    best = {k: -float(simulate(make_policy("optimal", {"must_finish": True, "n_jobs": 1}), ep, job).utility[0])
            for k, ep in eps.items()}
    assert best == pytest.approx({"A": 2.4, "B": 7.2})
    # A1 sees its window perfectly and, as any real forecaster, the past after it (tail="past"): the oracle's own tail
    # would read the future past the window
    for name, params in [("chc", {"w": 12, "predictor": "oracle", "tail": "past"}),
                         ("chc", {"w": 12, "predictor": "persistence"}),
                         ("prediction_free", {}), ("uniform_progress", {}), ("greedy", {}), ("slack_reserve", {})]:
        runs = {k: simulate(make_policy(name, params), ep, job) for k, ep in eps.items()}
        first = {k: (r.arrays["o"][0, :12], r.arrays["s"][0, :12]) for k, r in runs.items()}
        assert all(np.array_equal(x, y) for x, y in zip(first["A"], first["B"])), name  # it cannot tell them apart
        x = float(first["A"][1].sum())  # spot hours (= work) in slots 0-11
        cost = {k: float(r.cost[0]) for k, r in runs.items()}
        assert cost["A"] >= 2.4 + 0.4 * x - 1e-9 and cost["B"] >= 12.0 - 0.4 * x - 1e-9, (name, x, cost)
        assert any(cost[k] > 1.1 * best[k] for k in eps), (name, params, cost)


def test_a_plan_that_cannot_finish_in_its_model_still_works_now():
    """Spot flickered hour by hour in the past week (0.25-h restarts: half of each spot hour is restarts), so the
    tail's stalled hours exceed the job's slack: no plan finishes in the window problem. When every such plan
    earned the same constant, the cheapest, idling, won: CHC idled five hours, and the deadline net then held it
    on on-demand through every later spot spell (116.25 $ against uniform progress's 111.25 and the optimum's
    89.25). Priced by the work it leaves undone, the plan works now and takes the spells (91.25)."""
    past, H = 168, 48
    a = np.r_[np.tile([1, 0], past // 2), np.zeros(6), np.tile([1, 1, 1, 0, 0, 0], (H - 6) // 6)].astype(np.int64)
    mk = Market(a, np.full(past + H, 1.0), np.full(past + H, 3.0), 1.0, requested=1)
    ep = Episodes.from_windows(mk, [past], [past + H], history=past)
    job = Job(work=40.0, deadline_h=46.0, n_min=1, n_max=1, overhead_h=0.25)
    best = simulate(make_policy("optimal", {"must_finish": True, "n_jobs": 1}), ep, job).cost[0]
    up = simulate(make_policy("uniform_progress"), ep, job).cost[0]
    chc = simulate(make_policy("chc", {"w": 4, "predictor": "oracle"}), ep, job)
    assert best == pytest.approx(89.25) and up == pytest.approx(111.25)
    assert chc.met_hard_deadline.all() and chc.policy_report["fallback_rate"] == 0.0
    assert chc.arrays["o"][0, :4].sum() > 0  # it works at once
    assert chc.cost[0] <= 1.1 * best and chc.cost[0] < up


def test_the_tail_leaves_the_nets_margin_alone(spell_gap_episodes):
    """The Can't Be Late guard takes the job over once its slack falls under a restart and a slot, and then runs it
    on on-demand to the end. One instance, 48 h of work in 52 h, 10-min slots, 0.1-h restarts, a past of 5-h spot
    spells, then 12 h without spot and 2-h spells: a tail that counted that slack as its own idled into it and was
    held on on-demand through the spells that came (132.90 $, uniform progress 131.48); leaving the margin out,
    126.27. The tail here is the past's (the oracle's own sees the spells coming: 101.45)."""
    from spotlab.jobs.job import make_job
    from spotlab.policies.semantics import Semantics

    ep = spell_gap_episodes
    job = make_job(48, 52, overhead_hours=0.1)
    sem = Semantics.cant_be_late()
    up = simulate(sem.policy("uniform_progress"), ep, job, sem.settings).cost[0]
    chc = simulate(sem.policy("chc", {"predictor": "oracle", "tail": "past"}), ep, job, sem.settings)
    assert up == pytest.approx(131.482, abs=1e-3) and chc.met_deadline.all()
    assert chc.cost[0] == pytest.approx(126.265, abs=1e-3) and chc.policy_report["fallback_rate"] == 0.0


def test_the_oracles_tail_sees_past_the_window(spell_gap_episodes):
    """Perfect forecasts are perfect after the window too: with `predictor="oracle"` the tail is the oracle's
    forecast of its own slots, not the past's average. On the Can't Be Late run above (a past of 5-h spells, then
    12 h without spot and 2-h spells; a 2-h window) the past's tail idles into the drought and pays 126.27 $; the
    oracle's tail knows the spells are short and pays 101.45, 2.3% above the optimum's 99.20."""
    from spotlab.jobs.job import make_job
    from spotlab.policies.semantics import Semantics

    ep = spell_gap_episodes
    job = make_job(48, 52, overhead_hours=0.1)
    sem = Semantics.cant_be_late()
    best = simulate(sem.policy("optimal", {"n_jobs": 1}), ep, job, sem.settings).cost[0]
    runs = {tail: simulate(sem.policy("chc", {"predictor": "oracle", "tail": tail}), ep, job, sem.settings)
            for tail in ("auto", "oracle", "past")}
    assert runs["auto"].cost[0] == runs["oracle"].cost[0]  # the oracle's default
    assert runs["oracle"].met_deadline.all() and runs["oracle"].cost[0] <= 1.03 * best
    assert runs["past"].cost[0] > 1.2 * best


@pytest.mark.parametrize("params, msg", [({"predictor": "persistence", "tail": "oracle"}, "needs predictor='oracle'"),
                                         ({"predictor": "oracle", "tail": "future"}, "tail must be one of")])
def test_a_tail_from_the_future_needs_the_oracle(params, msg):
    from spotlab.errors import PolicyError

    with pytest.raises(PolicyError, match=msg):
        make_policy("chc", params)


def changed_regime_episodes(job: Job, rng: np.random.Generator) -> Episodes:
    """A market whose week of history had no spot or all of it, and whose job window is a synthetic regime: what
    the past's average gets wrong and a forecast of the tail's slots does not."""
    regimes = ["calm", "default", "volatile"]
    seed = int(rng.integers(1_000_000))
    past = synthetic_market(24 * 7, requested=4, od_price=OD, regime=str(rng.choice(regimes)), seed=seed)
    future = synthetic_market(24 * 2, requested=4, od_price=OD, regime=str(rng.choice(regimes)), seed=seed + 1)
    past_avail = np.full_like(past.avail, int(rng.choice([0, 4])))
    mk = Market(np.r_[past_avail, future.avail].astype(np.int64), np.r_[past.spot_price, future.spot_price],
                np.full(24 * 9, OD), 1.0, requested=4)
    return Episodes.from_windows(mk, [24 * 7], [24 * 7 + horizon_slots(job, 1.0)], history=24 * 7)


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_short_window_with_perfect_forecasts_is_near_the_optimum_when_the_regime_changes(seed):
    """w = 4 on horizons of 12..36 slots whose market is not the week before it: with perfect forecasts (the
    oracle's tail too) CHC is within 10% of the optimum (of its utility or, where that is near 0, of the job's
    on-demand cost); jobs with a value may give up, as the optimum may leave them unfinished."""
    rng = np.random.default_rng(seed)
    job = random_job(rng, max_deadline=24, overheads=(0.0, 0.1, 0.25))
    if not feasible(job):
        return
    ep = changed_regime_episodes(job, rng)
    may_stop = job.value > 0 or job.miss_penalty > 0
    params = {"mip_gap": 1e-6, "n_jobs": 1, "must_finish": not may_stop}
    best = float(min(simulate(make_policy("optimal", params), ep, job).utility[0],
                     simulate(make_policy("optimal_netted", params, give_up=may_stop), ep, job).utility[0]))
    scale = job.work / float(job.max_rate) * job.n_max * OD
    chc = simulate(make_policy("chc", {"w": 4, "predictor": "oracle", "solver": "highs", "mip_gap": 1e-4,
                                       "time_limit": 60.0}, give_up=may_stop), ep, job)
    got = float(chc.utility[0])
    assert chc.policy_report["fallback_rate"] == 0.0
    assert got >= best - 0.1 * max(abs(best), scale), (job, best, got)


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_the_restart_reserve_touches_only_value_jobs_planned_on_the_past(seed):
    """`restart_reserve` (on by default) reads a job's value later; on random jobs and synthetic markets
    it changes nothing for a cost-only job, nor before the oracle's tail (perfect forecasts place their restarts);
    where it applies, the net still meets the hard deadline."""
    rng = np.random.default_rng(seed)
    job = random_job(rng, max_deadline=12)
    if not feasible(job):
        return
    ep = episodes_for(job, rng)
    scale = job.work / float(job.max_rate) * job.n_max * OD
    valued = replace(job, value=1.5 * scale, miss_penalty=0.3 * scale)

    def run(j: Job, predictor: str, reserve: bool):
        return simulate(make_policy("chc", {"w": 6, "predictor": predictor, "restart_reserve": reserve},
                                    give_up=j.value > 0), ep, j)

    for j, predictor in ((replace(job, value=0.0, miss_penalty=0.0), "persistence"), (valued, "oracle")):
        off, on = run(j, predictor, False), run(j, predictor, True)
        np.testing.assert_array_equal(on.arrays["o"], off.arrays["o"])
        np.testing.assert_array_equal(on.arrays["s"], off.arrays["s"])
    on = run(valued, "persistence", True)
    assert on.policy_report["fallback_rate"] == 0.0
    assert (on.met_hard_deadline | on.summary()["gave_up"].to_numpy()).all()
