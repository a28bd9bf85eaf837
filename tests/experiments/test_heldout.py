"""The held-out check: the job shapes it draws, the bars it judges by, its resumable runs and its command."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import PolicyError, SpotlabError, TraceError
from spotlab.experiments import setups
from spotlab.experiments.heldout import BARS, HeldOut, bars, heldout_check, random_spec
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), index=st.integers(0, 1000))
def test_random_specs_cover_the_space_and_are_feasible(seed, index):
    spec = random_spec(seed, index)
    assert spec == random_spec(seed, index)  # the stream is seeded: job i is job i
    assert spec.n_max in (1, 2, 4, 8) and 1 <= spec.n_min <= spec.n_max
    assert -0.3 <= spec.beta <= 0.6 and 8 <= spec.deadline_h <= 72 and 0.4 <= spec.load <= 0.85
    if spec.value_factor == 0:  # cost-only: one deadline, nothing to lose after it
        assert spec.gamma == 1.0 and spec.miss_factor == 0.0
    else:
        assert 0.3 <= spec.value_factor <= 2.0 and 1.0 <= spec.gamma <= 1.6
    job = spec.job(synthetic_market(48, requested=8, od_price=3.0, seed=0))
    job.check_feasible(1.0)  # the work fits before the deadline at full speed, restarts included


def test_random_specs_span_both_signs_of_beta_and_both_kinds_of_job():
    specs = [random_spec(0, i) for i in range(60)]
    assert min(s.beta for s in specs) < 0 < max(s.beta for s in specs)
    kinds = {s.value_factor == 0 for s in specs}
    assert kinds == {True, False}
    assert {s.n_min < s.n_max for s in specs} == {True, False}
    assert any(0 < s.value_factor < 1 for s in specs)  # worth less than finishing on demand


def test_fixed_fields_override_the_drawn_ones_and_unknown_ones_fail():
    spec = random_spec(3, 1, n_max="4", value_factor=0.5)
    assert spec.n_max == 4 and isinstance(spec.n_max, int) and spec.value_factor == 0.5
    assert {k: v for k, v in asdict(spec).items() if k not in ("n_max", "value_factor")} == \
        {k: v for k, v in asdict(random_spec(3, 1)).items() if k not in ("n_max", "value_factor")}
    with pytest.raises(TraceError, match="unknown job field"):
        random_spec(0, 0, workload=3)
    with pytest.raises(TraceError, match="job field load='much' is not a number"):
        random_spec(0, 0, load="much")
    with pytest.raises(TraceError, match="model does not apply"):
        random_spec(0, 0, model="llama2-13b")


@pytest.mark.parametrize("fixed, message", [
    ({"n_min": "2.5"}, "job field n_min='2.5' is not a whole number"),
    ({"load": -0.5}, "job field load=-0.5 must be > 0"),
    ({"gamma": 0.5}, "job field gamma=0.5 must be >= 1"),
    ({"n_max": 0}, "job field n_max=0 must be >= 1"),
    ({"n_min": 4, "n_max": 2}, "job field n_min=4 must be at most n_max=2"),
    ({"beta": -5}, "beta=-5.0: H(4) = alpha*4 + beta = -1 must be > 0"),
    ({"deadline_h": "nan"}, "job field deadline_h=nan is not a finite number"),
])
def test_bad_fixed_fields_are_named(fixed, message):
    with pytest.raises(SpotlabError, match=re.escape(message)):
        random_spec(0, 1, **fixed)


def test_a_drawn_gpu_range_gives_way_to_a_fixed_bound():
    drawn = random_spec(0, 0)
    assert drawn.n_min > 2  # the case: a drawn N_min above the fixed N_max
    assert random_spec(0, 0, n_max=2).n_min == 2
    assert random_spec(0, 0, n_min=8).n_max == 8


def rows(market: str, method: str, utility: list[float], met: list[bool]) -> pd.DataFrame:
    return pd.DataFrame({"market": market, "method": method, "job": np.arange(len(utility)), "utility": utility,
                         "met_deadline": met, "fallback_rate": 0.0})


def frame(**methods) -> pd.DataFrame:
    return pd.concat([rows("m", k, *v) for k, v in methods.items()], ignore_index=True)


def test_bars_known_answers():
    ok = [True, True]
    jobs = frame(optimal=([100.0, 100.0], ok), optimal_netted=([100.0, 80.0], ok),
                 A1_chc_oracle_full=([99.5, 99.5], ok), A1_chc_oracle=([89.0, 92.0], ok),
                 A2_prediction_free=([50.0, 50.0], ok), A3_select=([70.0, 70.0], ok),
                 uniform_progress=([60.0, 60.0], ok), greedy=([80.0, 80.0], [True, False]))
    r = bars(jobs).iloc[0]
    assert r["a1_full"] == 1.0  # 99.5 >= 100 - 1
    assert r["a1_w"] == 1.0  # 90.5 >= 100 - 10 and >= 60
    assert r["a2"] == 0.0  # 50 < 60
    # greedy earns more but misses the deadline more often than A3: the reference is uniform progress
    assert r["a3"] == 1.0 and r["a3_reference"] == "uniform_progress"
    assert r["net_binds"] == 0.5
    # each bar says by how much: A1 relative to the optimum, A2 and A3 in $/job above their reference
    assert r["a1_full_gap"] == pytest.approx(-0.005) and r["a1_w_gap"] == pytest.approx(-0.095)
    assert r["a2_margin"] == pytest.approx(-10.0) and r["a3_margin"] == pytest.approx(10.0)
    # greedy that meets the deadline as often as A3 counts, and A3 is below it
    jobs.loc[jobs["method"] == "greedy", "met_deadline"] = True
    r = bars(jobs).iloc[0]
    assert r["a3"] == 0.0 and r["a3_reference"] == "greedy" and r["a3_margin"] == pytest.approx(-10.0)


def test_summary_counts_the_bars_and_their_margins():
    ok = [True]
    cells = []
    for a3, up in ((-120.04, -120.0), (-100.0, -130.0), (-150.0, -120.0)):
        jobs = frame(optimal=([-90.0], ok), A1_chc_oracle=([-95.0], ok), uniform_progress=([up], ok),
                     greedy=([-200.0], ok), A3_select=([a3], ok))
        cells.append(bars(jobs).iloc[0])
    s = HeldOut(pd.DataFrame(cells), pd.DataFrame()).summary().set_index("bar")
    assert list(s.index) == ["a1_full", "a1_w", "a2", "a3"]
    assert s.loc["a3", "runs"] == 3 and s.loc["a3", "holds"] == 2  # within the tie, above, 30 $/job below
    assert s.loc["a3", "mean"] == pytest.approx((-0.04 + 30.0 - 30.0) / 3)
    assert s.loc["a3", "worst"] == pytest.approx(-30.0)
    assert s.loc["a1_w", "worst"] == pytest.approx(-5.0 / 90.0)
    assert s.loc["a1_full", "runs"] == 0 and np.isnan(s.loc["a1_full", "mean"])


def test_bars_on_negative_utilities_and_without_the_window_methods():
    ok = [True]
    jobs = frame(optimal=([-100.0], ok), A1_chc_oracle=([-109.0], ok), uniform_progress=([-120.0], ok),
                 greedy=([-130.0], ok), A3_select=([-120.04], ok))
    r = bars(jobs).iloc[0]
    assert r["a1_w"] == 1.0  # -109 >= -100 - 10 and >= -120
    assert r["a3"] == 1.0  # within the 0.05 $/job tie of uniform progress
    assert np.isnan(r["a1_full"]) and np.isnan(r["a2"]) and np.isnan(r["net_binds"])
    jobs.loc[jobs["method"] == "A1_chc_oracle", "utility"] = -110.2
    assert bars(jobs).iloc[0]["a1_w"] == 0.0


def test_check_runs_every_method_resumes_and_writes_as_it_goes(tmp_path):
    res = heldout_check("calm", jobs=2, max_jobs=2, w=4, out_dir=tmp_path)
    c = res.checks
    assert list(c["job_spec"]) == [0, 1] and set(BARS) <= set(c.columns)
    assert c[list(BARS)].isin([0.0, 1.0]).all().all()
    for k in ("optimal", "optimal_netted", "A1_chc_oracle", "A1_chc_oracle_full", "A2_prediction_free",
              "A3_select", "greedy", "uniform_progress"):
        assert f"U_{k}" in c.columns and (c[f"fallback_{k}"] == 0).all()
    # the hindsight optimum bounds every online policy (the cost-only one must finish, like them)
    online = [k for k in c.columns if k.startswith("U_") and "optimal" not in k]
    assert (c[online].max(axis=1) <= c["U_optimal"] + 1e-6).all()
    on_disk = pd.read_csv(tmp_path / "heldout_checks.csv")
    assert len(on_disk) == 2 and (on_disk["U_optimal"].values == pytest.approx(c["U_optimal"].values))
    n_rows = len(pd.read_csv(tmp_path / "heldout_comparison_jobs.csv"))
    again = heldout_check("calm", jobs=2, max_jobs=2, w=4, out_dir=tmp_path)
    pd.testing.assert_frame_equal(again.checks, c, check_exact=False)
    assert len(pd.read_csv(tmp_path / "heldout_comparison_jobs.csv")) == n_rows  # read back, not appended
    # the net may give up exactly where the optimum may leave the job unfinished: on jobs with a value
    assert (c["give_up"] == ~c["cost_only"].astype(bool)).all()


def test_give_up_is_part_of_a_runs_key_and_checked(tmp_path):
    """Rows computed with the net's give-up off are not read back for a run with it on (and the other way)."""
    spec = next(i for i in range(20) if random_spec(0, i).value_factor > 0)
    off = heldout_check("calm", indices=[spec], max_jobs=2, w=4, full_window=False, out_dir=tmp_path, give_up=False)
    rows = len(pd.read_csv(tmp_path / "heldout_comparison_jobs.csv"))
    on = heldout_check("calm", indices=[spec], max_jobs=2, w=4, full_window=False, out_dir=tmp_path)
    assert not off.checks["give_up"].iloc[0] and on.checks["give_up"].iloc[0]
    assert len(pd.read_csv(tmp_path / "heldout_comparison_jobs.csv")) == rows  # superseded, not appended to
    assert (on.jobs["setup_key"].values != off.jobs["setup_key"].values).all()
    with pytest.raises(TraceError, match="give_up must be"):
        heldout_check("calm", jobs=1, give_up="yes")


def test_bad_inputs_fail_before_any_run(tmp_path):
    with pytest.raises(TraceError, match="none.csv: no such file"):
        heldout_check(str(tmp_path / "none.csv"), jobs=1)
    with pytest.raises(TraceError, match="unknown market 'nomarket'"):
        heldout_check("nomarket", jobs=1)
    with pytest.raises(TraceError, match="jobs must be"):
        heldout_check("calm", jobs=0)
    with pytest.raises(TraceError, match="w must be"):
        heldout_check("calm", jobs=1, w=0)
    mk = synthetic_market(24 * 9, requested=4, od_price=3.0, seed=1)
    tidy = pd.DataFrame({"time": pd.date_range("2025-01-01", periods=len(mk), freq="h", tz="UTC"), "cloud": "x",
                         "zone": "z", "gpu": "H100", "requested": 4, "available": mk.avail,
                         "spot_price": mk.spot_price, "on_demand_price": mk.od_price})
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        tidy.to_csv(tmp_path / d / "m.csv", index=False)
    with pytest.raises(TraceError, match="same name"):
        heldout_check([str(tmp_path / "a" / "m.csv"), str(tmp_path / "b" / "m.csv")], jobs=1)


def test_the_netted_optimum_is_the_optimum_where_the_slack_is_loose_and_never_a_pool_member():
    mk = synthetic_market(24 * 9, requested=4, od_price=3.0, regime="calm", seed=2)
    job = setups.JobSpec(deadline_h=12, gamma=1.5, load=0.3, n_max=4, alpha=1.0, beta=0.0).job(mk)
    ep = cut_windows(mk, horizon_hours=job.hard_deadline_h, stride_hours=24, max_jobs=2)
    plain = simulate(make_policy("optimal"), ep, job)
    netted = simulate(make_policy("optimal_netted"), ep, job)
    assert netted.utility == pytest.approx(plain.utility)
    with pytest.raises(PolicyError, match="cannot be a pool member"):
        simulate(make_policy("select", {"pool": [("optimal_netted", {}), ("greedy", {})]}), ep, job)


def test_the_netted_optimum_follows_the_net_where_the_hindsight_plan_cuts_it_close():
    """A tight cost-only job on flickering spot: the optimum rides spot to the last hour; the net does not."""
    found = False
    for seed in range(20):
        mk = synthetic_market(24 * 9, requested=4, od_price=3.0, regime="volatile", seed=seed)
        job = setups.JobSpec(deadline_h=10, gamma=1.0, load=0.85, n_max=4, alpha=1.0, beta=0.0, overhead_h=0.25,
                             value_factor=0.0, miss_factor=0.0).job(mk)
        ep = cut_windows(mk, horizon_hours=job.hard_deadline_h, stride_hours=6, max_jobs=6)
        plain = simulate(make_policy("optimal"), ep, job)
        netted = simulate(make_policy("optimal_netted"), ep, job)
        assert netted.met_hard_deadline.all()
        assert (netted.utility <= plain.utility + 1e-6).all()  # a must-finish optimum: the net only costs
        found |= bool((netted.utility < plain.utility - 1e-6).any())
        if found:
            break
    assert found


def run(*args):
    return subprocess.run([sys.executable, "-m", "spotlab", "heldout", *map(str, args)], capture_output=True,
                          text=True, timeout=600)


def test_command_prints_the_bars_and_fails_cleanly(tmp_path):
    p = run("calm", "--jobs", 1, "--max-jobs", 2, "--w", 4, "--no-full-window", "--out", tmp_path)
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stdout.splitlines() if " holds on " in line]
    assert [line.split()[0] for line in said] == ["a1_w", "a2", "a3"]  # no a1_full: --no-full-window
    assert all("mean " in line and "worst " in line for line in said), said
    assert (tmp_path / "heldout_checks.csv").is_file()
    for args, message in [(["nowhere.csv"], "nowhere.csv: no such file"), (["calm", "--job", "speed=3"], "unknown job field"),
                          (["calm", "--jobs", 0], "must be >= 1")]:
        p = run(*args, "--out", tmp_path)
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
