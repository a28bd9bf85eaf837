"""The exact DP optimum of a fixed-GPU-count job (`spotlab.optimum.dp.fixed_count`): equal to the MILP on random jobs and
markets, equal to the simulator's utility of its own schedule, and the Can't Be Late known answers."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError, SolverError
from spotlab.experiments.published import CANT_BE_LATE_MEAN_COST
from spotlab.jobs.job import Job, Throughput
from spotlab.market.load import load_market
from spotlab.market.market import Market
from spotlab.market.windows import cut_windows
from spotlab.optimum.dp.fixed_count import FixedCountDP, dp_applies
from spotlab.optimum.dp.lost_time import lost_levels
from spotlab.optimum.dp.pareto_labels import ParetoLabelDP
from spotlab.errors import TooManyLabels
from spotlab.optimum.dp.relaxation import AllocationRelaxation
from spotlab.optimum.dp.work_lattice import WorkLatticeDP
from spotlab.optimum.solve import OptimumProblem, solve_optimum
from spotlab.policies.registry import make_policy
from spotlab.policies.semantics import semantics_for
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings
from spotlab.simulation.slots import horizon_slots

EXACT = dict(mip_gap=1e-9, time_limit=60)
TOL = dict(rel=1e-6, abs=1e-5)


class Plan:
    """Replays given schedules (one row per window) without the safety net."""

    name = "plan"

    def __init__(self, o, s):
        self.o, self.s = np.atleast_2d(o), np.atleast_2d(s)

    def reset(self, ctx):
        pass

    def act(self, obs):
        return self.o[:, obs.t], self.s[:, obs.t]


@st.composite
def fixed_count_instances(draw):
    T = draw(st.integers(3, 14))
    n = draw(st.sampled_from([1, 1, 1, 2]))
    dt = draw(st.sampled_from([0.5, 1.0, 1 / 6]))
    delta = draw(st.sampled_from([0.0, 0.1, 0.2, 0.5, 0.7, 1.3]))
    tp = Throughput(alpha=draw(st.floats(0.5, 2.0)), beta=draw(st.floats(0.0, 0.5)))
    rate = float(tp(n))
    hard = T * dt - draw(st.sampled_from([0.0, 0.0, 0.3 * dt]))  # sometimes inside the last slot
    room = np.floor(hard / dt + 1e-9) * dt - delta
    assume(room > 0.05)
    work = draw(st.floats(0.05, 1.0)) * room * rate
    soft = draw(st.floats(min(hard, work / rate + delta), hard))
    # values of 0 < V < ~1e-4 are left out: HiGHS's presolve then returns a wrong "optimal" (found here: value
    # 1e-6, no penalty, must_finish off: HiGHS -4.5, GLPK, HiGHS without presolve and the DP 0)
    value = draw(st.one_of(st.just(0.0), st.floats(0.5, 40.0)))
    job = Job(work=work, deadline_h=soft, hard_deadline_h=hard, n_min=n, n_max=n, overhead_h=delta,
              throughput=tp, value=value, miss_penalty=draw(st.one_of(st.just(0.0), st.floats(0.5, 20.0))))
    avail = np.array(draw(st.lists(st.integers(0, n), min_size=T, max_size=T)))
    sp = np.array(draw(st.lists(st.floats(0.1, 3.5), min_size=T, max_size=T)))
    od = draw(st.sampled_from([np.full(T, 3.0), np.linspace(2.0, 4.0, T)]))
    mk = Market(avail=avail, spot_price=sp, od_price=od, slot_hours=dt, requested=n)
    return job, mk, draw(st.booleans()), draw(st.sampled_from(["fractional", "full"]))


@settings(max_examples=int(os.environ.get("SPOTLAB_HYPOTHESIS_EXAMPLES", 60)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(fixed_count_instances())
def test_dp_equals_the_milp_and_the_replayed_utility(case):
    job, mk, must_finish, billing = case
    H = horizon_slots(job, mk.slot_hours)
    args = (mk.avail[:H], mk.spot_price[:H], mk.od_price[:H])
    dp = FixedCountDP(job, H, mk.slot_hours, must_finish, billing)
    try:
        milp = OptimumProblem(job, H, mk.slot_hours, must_finish, billing).solve_window(*args, "highs", **EXACT)
    except SolverError as exc:  # infeasible for the MILP: the DP must say so too
        assert "infeasible" in str(exc)
        with pytest.raises(SolverError, match="infeasible"):
            dp.solve_window(*args)
        return
    assume(milp.status == "optimal")
    res = dp.solve_window(*args)
    assert res.status == "optimal" and res.solver == "dp" and res.gap == 0.0
    assert res.objective == pytest.approx(milp.objective, **TOL)
    assert np.all(res.s <= mk.avail[:H]) and np.all((res.o + res.s == 0) | (res.o + res.s == job.n_max))
    replay = simulate(Plan(res.o, res.s), mk, job, SimSettings(billing=billing))
    if billing == "fractional":  # the objective is the simulator's utility of the schedule
        assert replay.utility[0] == pytest.approx(res.objective, rel=1e-9, abs=1e-9)
    else:  # same bill; the simulator values the exact completion time, the model the end of its slot
        assert replay.utility[0] >= res.objective - 1e-9
        end = np.ceil(replay.completion_h[0] / mk.slot_hours - 1e-9) * mk.slot_hours if replay.done[0] else np.nan
        assert float(job.value_at(end)) - replay.cost[0] == pytest.approx(res.objective, abs=1e-9)
    if must_finish:
        assert replay.done[0]


def test_known_answer_ends_mid_slot():
    # the known answer of test_optimum_fractional: spot in slots 0 and 1, T = 1.75 h
    job = Job(work=1.5, deadline_h=1.0, hard_deadline_h=3.0, value=10.0, miss_penalty=5.0, overhead_h=0.25)
    args = ([1, 1, 1], [1.0, 1.0, 1.0], [3.0, 3.0, 3.0])
    frac = FixedCountDP(job, 3, 1.0, billing="fractional").solve_window(*args)
    full = FixedCountDP(job, 3, 1.0, billing="full").solve_window(*args)
    assert frac.objective == pytest.approx(4.5, abs=1e-12) and frac.s.tolist() == [1, 1, 0] and frac.o.tolist() == [0, 0, 0]
    assert full.objective == pytest.approx(3.0, abs=1e-12)


def test_overhead_longer_than_a_slot_carries_over():
    # delta = 1.5 slots: a restart loses slot 0 and half of slot 1. 2 units of work on 1 GPU in 4 slots of 1 h:
    # one start (1.5 h lost) finishes at 3.5 h. Spot is cheap in slots 0-1 and gone in slot 2 (a preemption,
    # a second restart): spot then on-demand loses 3 h and cannot finish; on-demand throughout costs 3.5 * 3.
    job = Job(work=2.0, deadline_h=4.0, overhead_h=1.5)
    res = FixedCountDP(job, 4, 1.0).solve_window([1, 1, 0, 0], [0.5] * 4, [3.0] * 4)
    assert res.o.tolist() == [1, 1, 1, 1] and res.objective == pytest.approx(-10.5, abs=1e-12)
    assert solve_optimum([1, 1, 0, 0], [0.5] * 4, [3.0] * 4, job, 1.0, solver="highs", **EXACT).objective == \
        pytest.approx(-10.5, abs=1e-7)


def test_lost_levels_are_exact_sums():
    lv = lost_levels(slack=4.0, slot=1 / 6, r=0.1, horizon=312)
    # multiples of 1/30 h that are 5A + 3B: every one from 8 on, and 0, 3, 5, 6
    q = np.round(lv.values * 30).astype(int)
    assert np.allclose(lv.values * 30, q) and q.tolist()[:5] == [0, 3, 5, 6, 8] and q.max() == 120
    assert lv.values[lv.plus_r[0]] == pytest.approx(0.1) and lv.plus_slot[-1] == lv.n  # beyond the slack: dead


def test_not_applicable_and_bad_input_are_clear():
    job = Job(work=2.0, deadline_h=4.0, n_min=1, n_max=2)
    assert not dp_applies(job)
    with pytest.raises(SolverError, match="fixed GPU count"):
        FixedCountDP(job, 4, 1.0)
    ok = Job(work=2.0, deadline_h=4.0)
    with pytest.raises(SolverError, match="spot price"):
        FixedCountDP(ok, 4, 1.0).solve_window([1] * 4, [1.0, np.nan, 1.0, 1.0], [3.0] * 4)
    with pytest.raises(SolverError, match="billing"):
        FixedCountDP(ok, 4, 1.0, billing="half")
    with pytest.raises(SolverError, match="infeasible"):
        FixedCountDP(Job(work=5.0, deadline_h=4.0), 4, 1.0).solve_window([1] * 4, [1.0] * 4, [3.0] * 4)
    # without having to finish, an impossible job idles and pays the miss penalty
    late = Job(work=5.0, deadline_h=4.0, miss_penalty=7.0)
    res = FixedCountDP(late, 4, 1.0, must_finish=False).solve_window([1] * 4, [1.0] * 4, [3.0] * 4)
    assert res.objective == -7.0 and res.o.sum() + res.s.sum() == 0


@st.composite
def lattice_instances(draw):
    """Multi-GPU jobs whose work per slot is on a lattice (throughput and overhead on simple fractions)."""
    T = draw(st.integers(3, 10))
    n_max = draw(st.integers(2, 4))
    n_min = draw(st.integers(1, n_max))
    dt = draw(st.sampled_from([0.5, 1.0]))
    delta = draw(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.25]))
    if draw(st.booleans()):
        tp = Throughput(alpha=draw(st.sampled_from([0.5, 1.0, 1.5])), beta=draw(st.sampled_from([0.0, 0.25, 0.5])))
    else:
        steps = draw(st.lists(st.sampled_from([0.5, 0.75, 1.0]), min_size=n_max, max_size=n_max))
        tp = Throughput.from_table({k + 1: float(np.cumsum(steps)[k]) for k in range(n_max)})
    rate = float(tp(n_max))
    hard = T * dt - draw(st.sampled_from([0.0, 0.0, 0.3 * dt]))
    room = np.floor(hard / dt + 1e-9) * dt - delta
    assume(room > 0.1)
    work = draw(st.floats(0.05, 1.0)) * room * rate
    soft = draw(st.floats(min(hard, work / rate + delta), hard))
    value = draw(st.one_of(st.just(0.0), st.floats(0.5, 40.0)))
    job = Job(work=work, deadline_h=soft, hard_deadline_h=hard, n_min=n_min, n_max=n_max, overhead_h=delta,
              throughput=tp, value=value, miss_penalty=draw(st.one_of(st.just(0.0), st.floats(0.5, 20.0))))
    avail = np.array(draw(st.lists(st.integers(0, n_max), min_size=T, max_size=T)))
    sp = np.array(draw(st.lists(st.floats(0.1, 3.5), min_size=T, max_size=T)))
    od = draw(st.sampled_from([np.full(T, 3.0), np.linspace(2.0, 4.0, T)]))
    mk = Market(avail=avail, spot_price=sp, od_price=od, slot_hours=dt, requested=n_max)
    return job, mk, draw(st.booleans()), draw(st.sampled_from(["fractional", "full"]))


@settings(max_examples=int(os.environ.get("SPOTLAB_HYPOTHESIS_EXAMPLES", 40)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(lattice_instances())
def test_work_lattice_dp_equals_the_milp_and_the_relaxation_bounds_it(case):
    job, mk, must_finish, billing = case
    H = horizon_slots(job, mk.slot_hours)
    args = (mk.avail[:H], mk.spot_price[:H], mk.od_price[:H])
    dp = WorkLatticeDP(job, H, mk.slot_hours, must_finish, billing)
    assert dp.applies
    try:
        milp = OptimumProblem(job, H, mk.slot_hours, must_finish, billing).solve_window(*args, "highs", **EXACT)
    except SolverError as exc:
        assert "infeasible" in str(exc)
        with pytest.raises(SolverError, match="infeasible"):
            dp.solve_window(*args)
        return
    assume(milp.status == "optimal")
    res = dp.solve_window(*args)
    assert res.objective == pytest.approx(milp.objective, **TOL)
    replay = simulate(Plan(res.o, res.s), mk, job, SimSettings(billing=billing))
    if billing == "fractional":
        assert replay.utility[0] == pytest.approx(res.objective, rel=1e-9, abs=1e-9)
    else:
        assert replay.utility[0] >= res.objective - 1e-9
    # the Lagrangian relaxation's bound is never below the optimum
    bound = AllocationRelaxation(job, H, mk.slot_hours, must_finish, billing).solve(*args).bound
    assert bound >= res.objective - 1e-7 * max(1.0, abs(res.objective))


def test_cant_be_late_known_answer_300_windows(cbl_trace, cbl_windows):
    # The 300 published windows, 48 h of work, 52 h deadline, 0.1 h overhead: the MILP's mean cost (README,
    # gap 1e-4) is 78.56, below the published omniscient policy's 79.63. The DP is exact and replays exactly.
    from spotlab.jobs.job import make_job
    from spotlab.policies.run import run_policy

    market = load_market(cbl_trace, spot_price=0.9731, od_price=3.06)
    loaded = cut_windows(market, windows=cbl_windows)
    settings = semantics_for(market)
    job = make_job(48, 52, overhead_hours=0.1)
    res = run_policy("optimal", {}, loaded, job, settings)
    assert res.policy_report["method"] == "dp" and res.policy_report["worst_gap"] == 0.0
    assert np.mean(res.cost) == pytest.approx(78.5617, abs=1e-3)
    assert np.mean(res.cost) <= CANT_BE_LATE_MEAN_COST[(52, "optimal")]
    assert res.met_deadline.all()
    H = horizon_slots(job, loaded.slot_hours)
    problem = OptimumProblem(job, H, loaded.slot_hours, billing="full")
    ep = loaded
    for w in (0, 137):  # two windows against the MILP
        milp = problem.solve_window(ep.avail[w, :H], ep.spot_price[w, :H], ep.od_price[w, :H], "highs", 120, 1e-7)
        assert res.cost[w] == pytest.approx(-milp.objective, abs=1e-5)


def test_optimal_policy_method_and_report():
    job = Job(work=3.0, deadline_h=4.0, n_min=1, n_max=2, overhead_h=0.25, throughput=Throughput(1.0, 0.5))
    mk = Market(avail=np.array([2, 0, 2, 2, 1, 0]), spot_price=np.full(6, 1.0), od_price=np.full(6, 3.0),
                slot_hours=1.0, requested=2)
    a = make_policy("optimal", {"method": "auto", "n_jobs": 1})
    b = make_policy("optimal", {"method": "milp", "n_jobs": 1, "mip_gap": 1e-9})
    ra, rb = simulate(a, mk, job), simulate(b, mk, job)
    assert a.report()["method"] == "dp" and b.report()["method"] == "milp"  # q = 1/8: the work-lattice DP
    assert ra.utility[0] == pytest.approx(rb.utility[0], abs=1e-6)
    assert b.report()["worst_gap"] is not None and b.report()["worst_gap"] <= 1e-6
    # not on a lattice and a negative value (V then rises after d: the label DP's dominance fails)
    odd = Job(work=3.0, deadline_h=4.0, hard_deadline_h=5.0, n_min=1, n_max=2,
              throughput=Throughput(1.0, 0.1234567891), value=-5.0)
    with pytest.raises(PolicyError, match="no exact DP"):
        simulate(make_policy("optimal", {"method": "dp"}), mk, odd)
    with pytest.raises(PolicyError, match="method"):
        make_policy("optimal", {"method": "fast"})


def test_warm_start_is_never_worse_than_the_baselines():
    # a MILP stopped at once still returns the best of the baselines' schedules (here: a 0.01 s limit)
    rng = np.random.default_rng(3)
    T = 40
    job = Job(work=60.0, deadline_h=30.0, hard_deadline_h=40.0, n_min=2, n_max=6, overhead_h=0.3,
              throughput=Throughput(1.0, 0.37), value=200.0, miss_penalty=100.0)
    mk = Market(avail=rng.integers(0, 7, T), spot_price=rng.uniform(0.5, 2.0, T), od_price=np.full(T, 3.0),
                slot_hours=1.0, requested=6)
    pol = make_policy("optimal", {"method": "milp", "time_limit": 0.01, "n_jobs": 1})
    opt = simulate(pol, mk, job)
    for name in ("uniform_progress", "greedy", "on_demand"):
        assert opt.utility[0] >= simulate(make_policy(name), mk, job).utility[0] - 1e-6, name
    r = pol.results_[0]
    assert r.bound is not None and r.bound >= r.objective - 1e-6 and r.gap is not None
    assert pol.report()["worst_gap"] == pytest.approx(r.gap)


@st.composite
def any_instances(draw):
    """Multi-GPU jobs with any throughput (floats, tables), overhead up to more than a slot, value >= 0."""
    T = draw(st.integers(3, 9))
    n_max = draw(st.integers(2, 3))
    n_min = draw(st.integers(1, n_max))
    dt = draw(st.sampled_from([0.5, 1.0]))
    delta = draw(st.sampled_from([0.0, 0.2, 0.7, 1.3]))
    if draw(st.booleans()):
        hs = np.cumsum(sorted(draw(st.lists(st.floats(0.5, 3.0), min_size=n_max, max_size=n_max))))
        tp = Throughput.from_table({k + 1: float(hs[k]) for k in range(n_max)})
    else:
        tp = Throughput(alpha=draw(st.floats(0.5, 2.0)), beta=draw(st.floats(0.0, 0.5)))
    rate = float(tp(n_max))
    hard = T * dt - draw(st.sampled_from([0.0, 0.0, 0.3 * dt]))
    room = np.floor(hard / dt + 1e-9) * dt - delta
    assume(room > 0.1)
    work = draw(st.floats(0.05, 1.0)) * room * rate
    soft = draw(st.floats(min(hard, work / rate + delta), hard))
    value = draw(st.one_of(st.just(0.0), st.floats(0.5, 40.0)))
    job = Job(work=work, deadline_h=soft, hard_deadline_h=hard, n_min=n_min, n_max=n_max, overhead_h=delta,
              throughput=tp, value=value, miss_penalty=draw(st.one_of(st.just(0.0), st.floats(0.5, 20.0))))
    avail = np.array(draw(st.lists(st.integers(0, n_max), min_size=T, max_size=T)))
    sp = np.array(draw(st.lists(st.floats(0.1, 3.5), min_size=T, max_size=T)))
    od = draw(st.sampled_from([np.full(T, 3.0), np.linspace(2.0, 4.0, T)]))
    mk = Market(avail=avail, spot_price=sp, od_price=od, slot_hours=dt, requested=n_max)
    return job, mk, draw(st.booleans()), draw(st.sampled_from(["fractional", "full"]))


@settings(max_examples=int(os.environ.get("SPOTLAB_HYPOTHESIS_EXAMPLES", 40)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(any_instances())
def test_label_dp_equals_the_milp_and_the_replayed_utility(case):
    job, mk, must_finish, billing = case
    H = horizon_slots(job, mk.slot_hours)
    args = (mk.avail[:H], mk.spot_price[:H], mk.od_price[:H])
    dp = ParetoLabelDP(job, H, mk.slot_hours, must_finish, billing)
    try:
        milp = OptimumProblem(job, H, mk.slot_hours, must_finish, billing).solve_window(*args, "highs", **EXACT)
    except SolverError as exc:
        assert "infeasible" in str(exc)
        with pytest.raises(SolverError, match="infeasible"):
            dp.solve_window(*args)
        return
    assume(milp.status == "optimal")
    res = dp.solve_window(*args)
    assert res.objective == pytest.approx(milp.objective, **TOL)
    replay = simulate(Plan(res.o, res.s), mk, job, SimSettings(billing=billing))
    if billing == "fractional":
        assert replay.utility[0] == pytest.approx(res.objective, rel=1e-9, abs=1e-9)
    else:
        assert replay.utility[0] >= res.objective - 1e-9


def test_label_dp_gives_up_and_the_milp_takes_over():
    job = Job(work=3.0, deadline_h=4.0, n_min=1, n_max=2, overhead_h=0.3, throughput=Throughput(1.0, 0.123456789))
    mk = Market(avail=np.array([2, 0, 2, 2, 1, 0]), spot_price=np.linspace(0.5, 1.5, 6), od_price=np.full(6, 3.0),
                slot_hours=1.0, requested=2)
    with pytest.raises(TooManyLabels):
        ParetoLabelDP(job, 4, 1.0, max_labels=1).solve_window(mk.avail, mk.spot_price, mk.od_price)
    pol = make_policy("optimal", {"n_jobs": 1})
    simulate(pol, mk, job)
    assert pol.report()["method"] == "dp" and pol.results_[0].solver == "dp"
