"""A1 committed horizon control and its window problem (SPEC §6).

The known answer: with perfect predictions, a window covering the whole horizon and full commitment,
CHC solves the offline problem once and must reach the optimum's utility. The window problem itself
must agree between GLPK and HiGHS and, from a mid-job state, plan consistently with the simulator.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError, SolverError
from spotlab.jobs.job import Job, Throughput
from spotlab.market.episodes import Episodes
from spotlab.market.synthetic import synthetic_market
from spotlab.optimum.solve import solve_optimum
from spotlab.optimum.window import WindowProblem
from spotlab.optimum.window_types import TailForecast, WindowState
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings


def small_job(**kw) -> Job:
    base = dict(work=4 * 10.0, deadline_h=16, hard_deadline_h=20, n_min=1, n_max=4,
                throughput=Throughput(1.0, 0.3), value=600.0, miss_penalty=200.0, overhead_h=0.25)
    return Job(**{**base, **kw})


def test_full_window_with_perfect_foresight_is_the_optimum():
    job = small_job()
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=5)
    opt = simulate(make_policy("optimal", {"must_finish": False, "solver": "highs"}), mk, job,
                   SimSettings())
    for solver in ("glpk", "highs"):
        chc = simulate(make_policy("chc", {"w": 20, "v": 20, "predictor": "oracle", "solver": solver,
                                           "mip_gap": 1e-6}), mk, job)
        assert chc.utility[0] == pytest.approx(opt.utility[0], rel=1e-6, abs=1e-6), solver
        assert chc.policy_report["solves"] == 1


def test_window_problem_from_a_mid_job_state_replays_exactly():
    """Plan from a running state with pending overhead: the work the plan counts on in each slot must be
    work the simulator's rules would credit (the model's overhead rules are the simulator's)."""
    job = small_job(overhead_h=1.5)  # overhead carried over two 1-h slots
    wp = WindowProblem(job, 6, 1.0)
    a = np.array([4, 4, 2, 0, 4, 4])
    sp = np.array([1.0, 1.0, 1.2, 1.0, 0.8, 0.8])
    od = np.full(6, 3.0)
    state = WindowState(time_h=5.0, remaining=12.0, prev_o=0, prev_s=4, pending_h=0.5)
    plans = {s: wp.solve(state, a, sp, od, None, slots_left=15, solver=s, mip_gap=1e-7)
             for s in ("glpk", "highs")}
    assert plans["glpk"].objective == pytest.approx(plans["highs"].objective, rel=1e-6)
    plan = plans["highs"]
    assert plan.work.sum() > 0
    # replay with the simulator's rules from the given state: the plan never counts on more work per slot
    # than the simulator would credit (overhead carried over, pending overhead, reconfigurations)
    prev_o, prev_s, pending = state.prev_o, state.prev_s, state.pending_h
    for t in range(6):
        o, s = int(plan.o[t]), int(plan.s[t])
        assert s <= a[t] and o + s <= job.n_max
        n = o + s
        credited = 0.0
        if n:
            if (o, s) != (prev_o, prev_s):
                pending = job.overhead_h
            lost = min(pending, 1.0)
            credited = float(job.throughput(n)) * (1.0 - lost)
            pending = max(pending - 1.0, 0.0)
        assert plan.work[t] <= credited + 1e-6, (t, plan.work[t], credited)
        prev_o, prev_s = o, s
    # the objective is the plan's utility: at most the value less what the slots before the last cost
    last = int(np.flatnonzero(plan.o + plan.s)[-1])
    cost = float((plan.o * od + plan.s * sp)[:last].sum())
    assert plan.objective <= job.value - cost + 1e-6


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), w=st.integers(2, 8), n_max=st.integers(1, 4),
       pending=st.sampled_from([0.0, 0.25, 0.75]), frac=st.floats(0.1, 1.0))
def test_window_problem_glpk_and_highs_agree(seed, w, n_max, pending, frac):
    rng = np.random.default_rng(seed)
    job = small_job(n_max=n_max, work=n_max * 8.0, overhead_h=0.75)
    a = rng.integers(0, n_max + 1, w)
    sp = rng.uniform(0.3, 2.5, w)
    od = np.full(w, 3.0)
    state = WindowState(time_h=float(rng.integers(0, 10)), remaining=job.work * frac,
                        prev_o=0, prev_s=int(min(a[0], n_max)), pending_h=pending)
    wp = WindowProblem(job, w, 1.0, blocks=4)
    bounds = wp.tail_for(state)
    n = bounds.size - 1
    tail = TailForecast(np.diff(bounds), rng.uniform(0, n_max, n) * np.diff(bounds), rng.uniform(0.3, 2.5, n),
                        np.full(n, 3.0)) if n else None
    res = [wp.solve(state, a, sp, od, tail, slots_left=20 - state.time_h,
                    solver=s, mip_gap=1e-7) for s in ("glpk", "highs")]
    assert res[0].objective == pytest.approx(res[1].objective, rel=1e-5, abs=1e-5)


def test_chc_variants_run_and_meet_the_hard_deadline():
    job = small_job()
    mks = [synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=s, regime="volatile") for s in range(3)]
    for params in ({"w": 6, "v": 1, "predictor": "persistence"},
                   {"w": 6, "v": 3, "predictor": "oracle", "sigma": 0.5, "averaging": True},
                   {"w": 6, "v": 2, "predictor": "oracle", "sigma": 0.3, "quantile": 0.9}):
        res = simulate(make_policy("chc", params), mks, job)
        assert res.met_hard_deadline.all(), params
        assert res.policy_report["fallback_slots"] == 0


def test_chc_uses_the_history_before_the_window():
    job = small_job()
    mk = synthetic_market(24 * 9, slot_hours=1.0, requested=4, od_price=3.0, seed=2)
    ep = Episodes.from_windows(mk, [24 * 7], [24 * 7 + 20], history=24 * 7)
    assert ep.history_avail.shape == (1, 24 * 7) and np.isfinite(ep.history_avail).all()
    res = simulate(make_policy("chc", {"w": 6, "v": 3, "predictor": "seasonal_naive"}), ep, job)
    assert res.policy_report["fit_failures"] == 0  # a week of history: the daily model fits at once
    short = Episodes.from_windows(mk, [5], [25], history=24)
    assert np.isnan(short.history_avail[0, :19]).all()
    res = simulate(make_policy("chc", {"w": 6, "v": 3, "predictor": "seasonal_naive"}), short, job)
    assert res.policy_report["fit_failures"] > 0 and res.met_hard_deadline.all()


def test_a_time_out_without_schedule_falls_back_and_is_counted(monkeypatch):
    job = small_job()
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=1)
    # what a time-out without schedule returns, for every window solved at a slot
    monkeypatch.setattr(WindowProblem, "solve_many", lambda self, problems, **k: [None] * len(problems))
    res = simulate(make_policy("chc", {"w": 6, "v": 2, "predictor": "oracle"}), mk, job)
    assert res.met_hard_deadline.all()
    assert res.policy_report["fallback_slots"] > 0 and res.policy_report["solves"] == 0
    assert res.metrics()["fallback_rate"] == pytest.approx(1.0)


def test_a_failing_solve_is_an_error_not_a_fallback(monkeypatch):
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=1)

    def boom(self, problems, **kwargs):  # what solve_many returns for a solve that failed
        return [SolverError("highs: the window problem (always feasible) ended with status 'infeasible'")
                for _ in problems]

    monkeypatch.setattr(WindowProblem, "solve_many", boom)
    with pytest.raises(PolicyError, match="chc: window 0, slot 0: highs: the window problem"):
        simulate(make_policy("chc", {"w": 6, "v": 2, "predictor": "oracle"}), mk, small_job())


@pytest.mark.parametrize("params, msg", [
    ({"v": 8, "w": 4}, "commitment level v=8 cannot exceed the window w=4"),
    ({"predictor": "crystal_ball"}, "predictor must be 'oracle' or one of .*got 'crystal_ball'"),
    ({"predictor": "arima", "sigma": 0.2}, "sigma is the error of predictor='oracle'"),
    ({"quantile": 1.5}, r"quantile must be None or a finite number in \(0, 1\)"),
    ({"solver": "cplex"}, r"solver must be one of 'glpk', 'highs' \(got 'cplex'\)"),
    ({"w": 0}, "w must be a whole number >= 1"),
])
def test_bad_parameters(params, msg):
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=1)
    with pytest.raises(PolicyError, match=msg):
        simulate(make_policy("chc", params), mk, small_job())


def test_window_problem_bad_input():
    wp = WindowProblem(small_job(), 4, 1.0)
    with pytest.raises(SolverError, match="availability must be 4 finite values"):
        wp.solve(WindowState(0.0, 10.0), [1, 2, np.nan, 1], np.ones(4), np.ones(4), None)
    with pytest.raises(SolverError, match="remaining work"):
        wp.solve(WindowState(0.0, -1.0), np.ones(4), np.ones(4), np.ones(4), None)
    with pytest.raises(SolverError, match="window w must be"):
        WindowProblem(small_job(), 0, 1.0)


def test_optimum_still_matches_after_the_shared_allocation_block():
    job = small_job()
    mk = synthetic_market(20, slot_hours=1.0, requested=4, od_price=3.0, seed=9)
    g = solve_optimum(mk.avail[:20], mk.spot_price[:20], mk.od_price[:20], job, 1.0, solver="glpk", must_finish=False)
    h = solve_optimum(mk.avail[:20], mk.spot_price[:20], mk.od_price[:20], job, 1.0, solver="highs", must_finish=False)
    assert g.objective == pytest.approx(h.objective, rel=1e-4)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), predictor=st.sampled_from(["persistence", "oracle"]))
def test_windows_solved_in_lockstep_decide_as_one_by_one(seed, predictor):
    """CHC solves the windows that re-plan at a slot together (`WindowProblem.solve_many`, the DPs at once for a
    job of few allocations): the same costs, completions and report as one `solve` per window."""
    from spotlab.market.windows import cut_windows

    job = Job(work=6.0, deadline_h=10, hard_deadline_h=12, n_min=1, n_max=1, throughput=Throughput(1.0, 0.0),
              value=0.0, miss_penalty=0.0, overhead_h=0.2)
    mk = synthetic_market(24 * 10, slot_hours=0.5, requested=1, od_price=3.0, seed=seed % 1000)
    ep = cut_windows(mk, horizon_hours=12, stride_hours=6, max_jobs=10)
    params = {"w": 6, "predictor": predictor}

    def run():
        res = simulate(make_policy("chc", params), ep, job)
        rep = res.policy_report
        return res.cost, res.completion_h, (rep["solves"], rep["solves_dp"], rep["fallback_slots"])

    together = run()

    def one_by_one(self, problems, **common):
        return [self.solve(**{**common, **p}) for p in problems]

    with pytest.MonkeyPatch.context() as m:
        m.setattr(WindowProblem, "solve_many", one_by_one)
        apart = run()
    assert ep.n >= 6
    np.testing.assert_array_equal(together[0], apart[0])
    np.testing.assert_array_equal(together[1], apart[1])
    assert together[2] == apart[2]
