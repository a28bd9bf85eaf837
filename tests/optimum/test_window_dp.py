"""The window problem's dynamic programme (`spotlab.optimum.window_dp`) against its MILP.

- On random small windows (any GPU range, beta of either sign or a measured throughput table, overheads
  shorter and longer than a slot with pending overhead, tails or none, the net's three variants, windows past
  the hard deadline, giving up or not): the DP's plan is within the gap of the MILP's optimum, its bound is a true bound, its objective is
  the utility of a real schedule (never above the optimum) and its work is what the simulator credits.
- CHC with the DP by default: a time-out without a plan still falls back to uniform progress and is
  counted; the MILP stays selectable; a job of negative value is left to the MILP.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError, SolverError
from spotlab.jobs.job import Job, Throughput
from spotlab.market.synthetic import synthetic_market
from spotlab.optimum.window import WindowProblem
from spotlab.optimum.window_types import TailForecast, WindowState
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate


def small_job(**kw) -> Job:
    base = dict(work=4 * 10.0, deadline_h=16, hard_deadline_h=20, n_min=1, n_max=4,
                throughput=Throughput(1.0, 0.3), value=600.0, miss_penalty=200.0, overhead_h=0.25)
    return Job(**{**base, **kw})


def credited(job: Job, state: WindowState, o: np.ndarray, s: np.ndarray, dt: float) -> np.ndarray:
    """Work the simulator credits each slot of a schedule run from `state` (no preemption: s <= availability)."""
    prev, pending = (state.prev_o, state.prev_s), state.pending_h
    out = np.zeros(o.size)
    for t in range(o.size):
        n = int(o[t] + s[t])
        if n:
            if (int(o[t]), int(s[t])) != prev:
                pending = job.overhead_h
            out[t] = float(job.throughput(n)) * (dt - min(pending, dt))
            pending = max(pending - dt, 0.0)
        prev = (int(o[t]), int(s[t]))
    return out


def random_window(seed: int, same_job: Job | None = None, same_w: int | None = None) -> tuple:
    """A random small window problem: (job, problem, state, availability, spot, on-demand, tail, solve options);
    with `same_job` and `same_w`, one of that job's windows of that length."""
    rng = np.random.default_rng(seed)
    n_max = int(rng.integers(1, 5))
    n_min = int(rng.integers(1, n_max + 1))
    overhead = float(rng.choice([0.0, 0.25, 0.75, 1.5]))
    tp = Throughput(1.0, float(rng.uniform(-0.3, 0.5))) if rng.random() < 0.7 else \
        Throughput.from_table({n: n * float(rng.uniform(0.7, 1.0)) for n in range(1, n_max + 1)})  # measured
    job = small_job(n_min=n_min, n_max=n_max, work=n_max * float(rng.uniform(3, 10)), throughput=tp,
                    overhead_h=overhead, value=float(rng.choice([0.0, 60.0, 600.0])),
                    miss_penalty=float(rng.choice([0.0, 100.0])))
    w = int(rng.integers(1, 7))
    if same_job is not None:
        job, w = same_job, int(same_w)
        n_max, n_min, overhead = job.n_max, job.n_min, float(job.overhead_h)
    a = rng.integers(0, n_max + 1, w)
    sp = rng.uniform(0.3, 2.5, w)
    od = np.full(w, 3.0) if rng.random() < 0.5 else rng.uniform(2.0, 4.0, w)
    prev_s = int(rng.integers(0, n_max + 1))
    prev_o = int(rng.integers(max(0, n_min - prev_s), n_max - prev_s + 1)) if rng.random() < 0.7 else 0
    running = prev_o + prev_s > 0
    state = WindowState(time_h=float(rng.integers(0, 19)), remaining=job.work * float(rng.uniform(0.05, 1.0)),
                        prev_o=prev_o if running else 0, prev_s=prev_s if running else 0,
                        pending_h=float(rng.choice([0.0, min(overhead, 0.25), overhead])) if running else 0.0)
    wp = WindowProblem(job, w, 1.0, blocks=int(rng.integers(0, 5)))
    bounds = wp.tail_for(state)
    k = bounds.size - 1
    mixed = rng.random() < 0.5  # a second tier (spot beside on-demand), dearer or cheaper than the first
    tail = TailForecast(np.diff(bounds), rng.uniform(0, n_max, k) * np.diff(bounds), rng.uniform(0.3, 2.5, k),
                        np.full(k, 3.0), stalled_hours=rng.uniform(0, 0.5, k) * np.diff(bounds) * rng.integers(0, 2),
                        mixed_gpu_hours=rng.uniform(0, n_max, k) * np.diff(bounds) if mixed else None,
                        mixed_price=rng.uniform(0.3, 3.5, k) if mixed else None) \
        if k and rng.random() < 0.8 else None
    urgency = float(rng.choice([0.0, 0.005]))
    common = dict(slots_left=int(np.ceil(job.hard_deadline_h - state.time_h)), urgency=urgency,
                  must_finish=bool(rng.random() < 0.7), net=str(rng.choice(["strict", "cbl", "off"])))
    return job, wp, state, a, sp, od, tail, common


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_dp_plans_are_within_the_gap_of_the_milp(seed):
    job, wp, state, a, sp, od, tail, common = random_window(seed)
    gap = 1e-2
    try:
        best = wp.solve(state, a, sp, od, tail, method="milp", solver="highs", mip_gap=1e-7, time_limit=60.0,
                        **common)
    except SolverError:  # a state the simulator's net never lets a job reach: no schedule keeps the net
        with pytest.raises(SolverError, match="no plan keeps the safety net"):
            wp.solve(state, a, sp, od, tail, method="dp", mip_gap=gap, **common)
        return
    dp = wp.solve(state, a, sp, od, tail, method="dp", mip_gap=gap, **common)
    auto = wp.solve(state, a, sp, od, tail, method="auto", solver="highs", mip_gap=gap, **common)
    tol = 1e-6 * abs(best.objective) + 1e-5  # the MILP's feasibility tolerances
    scale = abs(best.objective)
    assert dp.method == "dp" and dp.status in ("optimal", "gap")
    if dp.status == "optimal":  # proven: within the gap of the optimum (else the default leaves it to the MILP)
        assert dp.objective >= best.objective - gap * scale - tol
    assert auto.status == "optimal" and auto.objective >= best.objective - gap * scale - tol
    assert dp.bound >= best.objective - tol  # a true bound
    if not np.all(od == od[0]):
        # the value of a real schedule, so never above the optimum. (With one on-demand price the MILP adds a
        # symmetry cut, "a run after an idle slot holds spot", which the safety net can make too strong: a run
        # the net forces late cannot always start a slot earlier; the DP, without it, may then do better.)
        assert dp.objective <= best.objective + tol
    assert np.all(dp.s <= np.floor(np.minimum(a, job.n_max))) and np.all(dp.o + dp.s <= job.n_max)
    assert np.all((dp.o + dp.s == 0) | (dp.o + dp.s >= job.n_min))
    assert np.all(dp.work <= credited(job, state, dp.o, dp.s, 1.0) + 1e-9)


def test_the_dp_proves_what_the_milp_proves_on_a_mid_job_state():
    """The known case of `test_chc.py` (overhead carried over two slots, 0.5 h pending): same optimum."""
    job = small_job(overhead_h=1.5)
    wp = WindowProblem(job, 6, 1.0)
    a = np.array([4, 4, 2, 0, 4, 4])
    sp = np.array([1.0, 1.0, 1.2, 1.0, 0.8, 0.8])
    od = np.full(6, 3.0)
    state = WindowState(time_h=5.0, remaining=12.0, prev_o=0, prev_s=4, pending_h=0.5)
    dp = wp.solve(state, a, sp, od, None, slots_left=15, method="dp", mip_gap=1e-3)
    milp = wp.solve(state, a, sp, od, None, slots_left=15, solver="highs", mip_gap=1e-9)
    assert dp.status == "optimal" and dp.bound - dp.objective <= 1e-3 * abs(dp.objective)
    assert dp.objective == pytest.approx(milp.objective, rel=1e-9)  # the optimum itself here
    assert np.all(dp.work <= credited(job, state, dp.o, dp.s, 1.0) + 1e-9)


def test_a_dp_time_out_falls_back_and_is_counted():
    job = small_job()
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=1)
    wp = WindowProblem(job, 6, 1.0)
    assert wp.solve(WindowState(0.0, job.work), mk.avail[:6], mk.spot_price[:6], np.full(6, 3.0),
                    method="dp", time_limit=1e-9) is None
    res = simulate(make_policy("chc", {"w": 6, "predictor": "oracle", "time_limit": 1e-9}), mk, job)
    assert res.met_hard_deadline.all()
    assert res.policy_report["solves"] == 0 and res.policy_report["time_limit_no_schedule"] > 0
    assert res.metrics()["fallback_rate"] == pytest.approx(1.0)


def test_methods_are_selectable_and_agree():
    job = small_job()
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=3, regime="volatile")
    runs = {m: simulate(make_policy("chc", {"w": 6, "predictor": "oracle", "method": m}), mk, job)
            for m in ("auto", "dp", "milp")}
    assert runs["milp"].policy_report["solves_dp"] == 0
    assert runs["dp"].policy_report["solves_dp"] == runs["dp"].policy_report["solves"] > 0
    for res in runs.values():
        assert res.met_hard_deadline.all() and res.policy_report["fallback_rate"] == 0.0
    scale = abs(runs["milp"].utility[0])
    assert runs["auto"].utility[0] >= runs["milp"].utility[0] - 0.02 * scale


def test_a_job_of_negative_value_is_left_to_the_milp():
    job = small_job(value=-50.0, miss_penalty=0.0)
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=2)
    res = simulate(make_policy("chc", {"w": 4, "predictor": "oracle"}), mk, job)
    assert res.policy_report["solves"] > 0 and res.policy_report["solves_dp"] == 0
    with pytest.raises(PolicyError, match="the DP needs a job value >= 0"):
        simulate(make_policy("chc", {"w": 4, "predictor": "oracle", "method": "dp"}), mk, job)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_a_must_finish_plan_that_cannot_finish_does_all_it_can(seed):
    """More work left than N_max GPUs in every window slot and the whole tail can do: no plan finishes, and each
    unit left undone is priced above what any unit of work costs, so both methods run N_max GPUs in every slot
    (spot where there is some) and agree; a plan that may give up weighs the miss penalty instead."""
    rng = np.random.default_rng(seed)
    n_max = int(rng.integers(1, 5))
    job = small_job(n_min=int(rng.integers(1, n_max + 1)), n_max=n_max,
                    throughput=Throughput(1.0, float(rng.uniform(-0.3, 0.5))),
                    overhead_h=float(rng.choice([0.0, 0.25])), value=float(rng.choice([0.0, 300.0])),
                    miss_penalty=float(rng.choice([0.0, 50.0])), work=n_max * 30.0)
    w = int(rng.integers(1, 5))
    wp = WindowProblem(job, w, 1.0, blocks=4)
    state = WindowState(time_h=float(rng.integers(0, 8)), remaining=job.work)
    bounds = wp.tail_for(state)
    k = bounds.size - 1
    hours = np.diff(bounds)
    # the tail stands still most of its hours (restarts), so the job cannot finish by the hard deadline
    tail = TailForecast(hours, rng.uniform(0, n_max, k) * hours, rng.uniform(0.3, 2.5, k), np.full(k, 3.0),
                        stalled_hours=0.8 * hours)
    a = rng.integers(0, n_max + 1, w)
    args = (state, a, rng.uniform(0.3, 2.5, w), np.full(w, 3.0), tail)
    for net in ("strict", "off"):  # (the strict net, which fires here, imposes on-demand GPUs)
        plans = [wp.solve(*args, method=m, solver="highs", mip_gap=1e-6, slots_left=w, net=net) for m in ("milp", "dp")]
        for plan in plans:
            assert np.all(plan.o + plan.s == n_max), plan
            if net == "off" and job.overhead_h == 0:  # spot first, where a change costs nothing
                assert np.all(plan.s == np.minimum(a, n_max)), plan
        assert plans[1].objective == pytest.approx(plans[0].objective, rel=1e-6, abs=1e-4)
    give_up = wp.solve(*args, method="dp", mip_gap=1e-6, slots_left=w, must_finish=False, net="off")
    assert give_up.objective >= plans[1].objective - 1e-6


@pytest.mark.parametrize("method", ["dp", "milp"])
def test_a_job_that_may_stop_stops_where_the_net_would_take_it_over(method):
    """Give-up (`must_finish=False`) inside the strict net: a job whose finishing on demand costs more than its
    value and penalty stops (earning -penalty) instead of being driven to the end on on-demand GPUs, as the net
    with `give_up` does. Before, the window problem only knew the net's on-demand rescue: with no spot in sight,
    CHC with perfect forecasts paid 841 $ to earn a 529-$ job (GCP H100 europe-west3-c) where stopping lost 55."""
    job = Job(work=8.0, deadline_h=10.0, hard_deadline_h=10.0, n_min=1, n_max=1, value=10.0, miss_penalty=2.0)
    wp = WindowProblem(job, 10, 1.0, blocks=0)
    state = WindowState(0.0, job.work, 0, 0, 0.0)
    args = (state, np.zeros(10), np.ones(10), np.full(10, 3.0), None)
    stop = wp.solve(*args, slots_left=10, must_finish=False, net="strict", method=method, solver="highs")
    assert stop.objective == pytest.approx(-2.0) and not (stop.o + stop.s).any()
    keep = wp.solve(*args, slots_left=10, must_finish=True, net="strict", method=method, solver="highs")
    assert keep.objective == pytest.approx(10.0 - 8 * 3.0) and keep.o.sum() == 8  # must finish: it finishes


@pytest.mark.parametrize("method", ["dp", "milp"])
def test_the_timing_bias_does_not_decide_whether_to_finish(method):
    """A job worth slightly less than finishing it on spot (12.16 $ of spot against value 10 + penalty 2): at the
    true prices the plan stops. The timing bias (`urgency`: the window's spot up to 10% cheaper) made finishing
    look worth 0.2 $ more than stopping; the decision to stop is now taken at the true prices, and a job worth
    finishing still finishes under the bias."""
    job = Job(work=8.0, deadline_h=10.0, hard_deadline_h=10.0, n_min=1, n_max=1, value=10.0, miss_penalty=2.0)
    wp = WindowProblem(job, 4, 1.0, blocks=6)
    state = WindowState(0.0, job.work, 0, 0, 0.0)
    k = wp.tail_for(state).size - 1
    tail = TailForecast(np.ones(k), np.ones(k), np.full(k, 1.52), np.full(k, 3.0))
    common = dict(slots_left=10, must_finish=False, net="strict", method=method, solver="highs", mip_gap=1e-6)
    args = (state, np.ones(4), np.full(4, 1.52), np.full(4, 3.0), tail)
    stop = wp.solve(*args, urgency=0.1, **common)
    assert not (stop.o + stop.s).any() and stop.objective == pytest.approx(-2.0)
    worth = wp.solve(state, np.ones(4), np.full(4, 1.4), np.full(4, 3.0),
                     TailForecast(np.ones(k), np.ones(k), np.full(k, 1.4), np.full(k, 3.0)), urgency=0.1, **common)
    assert worth.s[0] == 1  # 11.2 $ of spot for 10 + 2: it runs


@pytest.mark.parametrize("method", ["dp", "milp"])
def test_a_job_no_price_can_make_pay_stops_at_once(method):
    """Far from the net (20 h for 8 h of work) a job that may give up stops only where the net would take it over,
    unless no price it sees could make finishing pay: 8 GPU-hours at 0.8 $ at best against value 5 + penalty 1. Then
    it stops at once instead of working until the net's limit and losing what it spent; worth 10, it works."""
    def plan(value: float):
        job = Job(work=8.0, deadline_h=20.0, hard_deadline_h=20.0, n_min=1, n_max=1, value=value, miss_penalty=1.0)
        wp = WindowProblem(job, 2, 1.0, blocks=4)
        state = WindowState(0.0, job.work, 0, 0, 0.0)
        k = wp.tail_for(state).size - 1
        tail = TailForecast(np.full(k, 4.5), np.full(k, 4.5), np.full(k, 1.0), np.full(k, 3.0))
        return wp.solve(state, np.ones(2), np.full(2, 0.8), np.full(2, 3.0), tail, slots_left=20, must_finish=False,
                        net="strict", method=method, solver="highs", mip_gap=1e-6)

    hopeless = plan(5.0)
    assert not (hopeless.o + hopeless.s).any() and hopeless.objective == pytest.approx(-1.0)
    worth = plan(10.0)
    assert worth.s[0] == 1 and worth.objective > -1.0


@pytest.mark.parametrize("method", ["dp", "milp"])
def test_a_tail_that_is_a_forecast_may_be_left_unfinished(method):
    """A job that may give up, worth 10 $ (penalty 1): two slots of spot at 0.8 $, then a tail with no spot, so
    finishing costs 1.6 + 6 h on demand at 3 $ = 19.6 $. A tail that is the past's average must still finish (its
    spot may be wrong), so the plan works now; a tail that is a forecast (`TailForecast.forecast`) may be left
    unfinished, and the plan does nothing: -1 $ against 10 - 19.6."""
    job = Job(work=8.0, deadline_h=20.0, hard_deadline_h=20.0, n_min=1, n_max=1, value=10.0, miss_penalty=1.0)
    wp = WindowProblem(job, 2, 1.0, blocks=4)
    state = WindowState(0.0, job.work, 0, 0, 0.0)
    k = wp.tail_for(state).size - 1

    def plan(forecast: bool):
        tail = TailForecast(np.full(k, 4.5), np.zeros(k), np.full(k, 0.8), np.full(k, 3.0), forecast=forecast)
        return wp.solve(state, np.ones(2), np.full(2, 0.8), np.full(2, 3.0), tail, slots_left=20, must_finish=False,
                        net="strict", method=method, solver="highs", mip_gap=1e-6)

    past = plan(False)
    assert past.s[0] == 1
    ahead = plan(True)
    assert not (ahead.o + ahead.s).any() and ahead.objective == pytest.approx(-1.0)


@pytest.mark.parametrize("method", ["dp", "milp"])
def test_after_a_forecast_tail_on_demand_is_bought_early(method):
    """No spot anywhere, 8 h of work, 20 h to do it: on-demand hours cost the same now or later. After the past's
    tail the timing bias buys them later (waiting keeps the chance of spot); after a tail that is a forecast there is
    no such chance, and on-demand hours deferred into a fluid tail land between spot spells in a real market, so
    the plan buys them now."""
    job = Job(work=8.0, deadline_h=20.0, hard_deadline_h=20.0, n_min=1, n_max=1, overhead_h=0.1)
    wp = WindowProblem(job, 3, 1.0, blocks=4)
    state = WindowState(0.0, job.work, 0, 0, 0.0)
    k = wp.tail_for(state).size - 1

    def plan(forecast: bool):
        tail = TailForecast(np.diff(wp.tail_for(state)), np.zeros(k), np.full(k, 0.8), np.full(k, 3.0),
                            forecast=forecast)
        return wp.solve(state, np.zeros(3), np.full(3, 0.8), np.full(3, 3.0), tail, slots_left=20, urgency=0.1,
                        net="strict", method=method, solver="highs", mip_gap=1e-6)

    past, ahead = plan(False), plan(True)
    assert past.o[0] == 0
    assert np.all(ahead.o == 1)


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_the_band_of_reachable_levels_gives_the_whole_grids_plan(seed):
    """The backward pass computes only the levels a window can reach (`WindowDP.band`): the same plan, objective,
    bound and status as the whole grid, bit for bit."""
    from spotlab.optimum.window_dp import WindowDP

    job, wp, state, a, sp, od, tail, common = random_window(seed)
    if job.value < 0:
        return

    def solve():
        try:
            return wp.solve(state, a, sp, od, tail, method="dp", mip_gap=1e-2, **common)
        except SolverError as exc:
            return str(exc)

    band = solve()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(WindowDP, "band", lambda self, grid: grid.n)
        whole = solve()
    if isinstance(band, str) or isinstance(whole, str):
        assert band == whole
        return
    assert band.status == whole.status and band.objective == whole.objective and band.bound == whole.bound
    assert np.array_equal(band.o, whole.o) and np.array_equal(band.s, whole.s) and np.array_equal(band.work, whole.work)


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 6))
def test_the_batched_dp_plans_each_window_as_the_per_window_dp(seed, n):
    """`window_dp_batch.solve_batch` of several windows of one job: per window the plan, objective, bound and
    status of `WindowDP.solve`, bit for bit (or the same error)."""
    from spotlab.optimum.window_dp import WindowDP
    from spotlab.optimum.window_dp_batch import solve_batch

    job, wp, *_ = random_window(seed)
    if job.value < 0:
        return
    w = wp.w
    terms = []
    for k in range(n):
        _, wk, state, a, sp, od, tail, common = random_window(seed + 1 + k, same_job=job, same_w=w)
        try:
            terms.append(wk.terms(state, a, sp, od, tail, common["slots_left"], common["urgency"],
                                  common["must_finish"], common["net"]))
        except SolverError:
            continue
    if not terms:
        return
    dp = WindowDP(job, w, 1.0)

    def one(tm):
        try:
            return WindowDP(job, w, 1.0).solve(tm, time_limit=60.0, mip_gap=1e-2)
        except SolverError as exc:
            return exc

    want = [one(tm) for tm in terms]
    got = solve_batch(dp, terms, time_limit=60.0, mip_gap=1e-2)
    for a_, b_ in zip(want, got):
        if isinstance(a_, SolverError) or isinstance(b_, SolverError):
            assert str(a_) == str(b_)
            continue
        assert (a_ is None) == (b_ is None)
        if a_ is None:
            continue
        assert a_.status == b_.status and a_.objective == b_.objective and a_.bound == b_.bound
        assert np.array_equal(a_.o, b_.o) and np.array_equal(a_.s, b_.s) and np.array_equal(a_.work, b_.work)
