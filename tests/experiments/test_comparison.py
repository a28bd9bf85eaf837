"""Policy selection and main comparison experiments (notebooks 06, 07) on tiny synthetic set-ups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spotlab.errors import PolicyError, TraceError
from spotlab.experiments import comparison as cmp
from spotlab.experiments import setups
from spotlab.market.load import load_market
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.policies.registry import make_policy
from spotlab.simulation.engine import simulate
from spotlab.simulation.settings import SimSettings

POOL = [("prediction_free", {"theta": 0.4, "sigma": 0.8}), ("prediction_free", {"theta": 1.0, "sigma": 1.0}),
        ("prediction_free", {"theta": 0.2, "sigma": 0.6})]
SPEC = setups.JobSpec(deadline_h=8.0, n_max=4)


@pytest.fixture(scope="module")
def market():
    return synthetic_market(24 * 4, slot_hours=1.0, requested=4, od_price=3.0, regime="volatile", seed=3)


def cheap_methods():
    return {"A3_select": ("select", {"pool": POOL}), "A2_prediction_free": ("prediction_free", {}),
            "on_demand": ("on_demand", {}), "greedy": ("greedy", {}), "uniform_progress": ("uniform_progress", {})}


# ------------------------------------------------------------------------------------------ selection


def test_selection_run_structure(market):
    frame, s = cmp.selection_run(market, SPEC, pool=POOL, stride_hours=2.0, max_jobs=30, skip_hours=0)
    assert len(frame) == s["rounds"] == 30
    names = list(s["final_weights"])
    assert len(names) == 3
    w = frame[[f"weight_{n}" for n in names]].to_numpy()
    assert np.allclose(w.sum(axis=1), 1.0)
    assert np.allclose(w[0], 1 / 3)  # starts uniform
    U = frame[[f"utility_{n}" for n in names]].to_numpy()
    best = np.cumsum(U, axis=0).max(axis=1)
    assert np.allclose(frame["regret"], best - np.cumsum(frame["utility_expected"]))
    assert s["regret"] == pytest.approx(frame["regret"].iloc[-1])
    assert s["best_member"] == names[int(np.argmax(U.sum(axis=0)))]
    assert s["bound_hedge"] > 0 and s["bound_hedge"] == pytest.approx(frame["bound_hedge"].iloc[-1])
    assert np.isfinite(s["regret_slope"]) or s["slope_note"]
    assert s["algorithm"] == "flipflop" and sum(s["chosen_counts"].values()) == 30


def test_regret_slope_is_the_loglog_fit(market):
    from spotlab.policies.regret import loglog_slope

    frame, s = cmp.selection_run(market, SPEC, pool=POOL, stride_hours=2.0, max_jobs=30, slope_start=1, skip_hours=0)
    try:
        want = loglog_slope(frame["round"], frame["regret"], start=1)
    except PolicyError:
        assert np.isnan(s["regret_slope"]) and s["slope_note"]
    else:
        assert s["regret_slope"] == pytest.approx(want)


def test_ablation_matches_select_with_that_algorithm(market):
    """AdaHedge, Hedge and EXP3 computed from the FlipFlop replay are what select(algorithm=...) itself does."""
    frame, summ = cmp.selection_runs(market, SPEC, pool=POOL, stride_hours=3.0, max_jobs=12, seed=2, skip_hours=0)
    assert list(summ["algorithm"]) == list(cmp.ALGORITHMS) and cmp.ALGORITHMS[0] == "flipflop"
    job = SPEC.job(market)
    ep = cut_windows(market, horizon_hours=job.hard_deadline_h, stride_hours=3.0, max_jobs=12, skip_hours=0)
    for algo in ("adahedge", "hedge", "exp3"):
        pol = make_policy("select", {"pool": POOL, "algorithm": algo})
        res = simulate(pol, ep, job, SimSettings(), 2)
        e = frame[frame["algorithm"] == algo]
        assert np.array_equal(e["chosen"].to_numpy(), pol.run_.chosen)
        assert np.allclose(e["utility_chosen"].to_numpy(), res.utility)
        assert summ.set_index("algorithm").loc[algo, "regret"] == pytest.approx(pol.report()["regret"])
    # "-cold" is the same selector without the warm-up on the trace's past (a longer market: a week of it)
    long = synthetic_market(24 * 9, slot_hours=1.0, requested=4, od_price=3.0, regime="volatile", seed=3)
    frame, summ = cmp.selection_runs(long, SPEC, pool=POOL, algorithms=["flipflop", "flipflop-cold"],
                                     stride_hours=3.0, max_jobs=12, seed=2)
    ep = cut_windows(long, horizon_hours=job.hard_deadline_h, stride_hours=3.0, max_jobs=12)
    warm = make_policy("select", {"pool": POOL})
    simulate(warm, ep, job, SimSettings(), 2)
    assert warm.report()["warmup_rounds"] > 40
    assert np.array_equal(frame[frame["algorithm"] == "flipflop"]["chosen"].to_numpy(), warm.run_.chosen)
    pol = make_policy("select", {"pool": POOL, "warmup": False})
    simulate(pol, ep, job, SimSettings(), 2)
    assert pol.report()["warmup_rounds"] == 0
    cold = frame[frame["algorithm"] == "flipflop-cold"]
    assert np.array_equal(cold["chosen"].to_numpy(), pol.run_.chosen)
    assert summ.set_index("algorithm").loc["flipflop-cold", "regret"] == pytest.approx(pol.report()["regret"])
    with pytest.raises(PolicyError, match="unknown selection algorithm 'hedge-warm'"):
        cmp.selection_runs(market, SPEC, pool=POOL, algorithms=["hedge-warm"], max_jobs=3, skip_hours=0)


def test_selection_bad_inputs(market):
    with pytest.raises(PolicyError, match="algorithm"):
        cmp.selection_run(market, SPEC, pool=POOL, algorithm="ucb", max_jobs=3, skip_hours=0)
    with pytest.raises(PolicyError, match="pool"):
        cmp.selection_run(market, SPEC, pool="nope", max_jobs=3, skip_hours=0)
    with pytest.raises(TraceError, match="unknown market"):
        cmp.selection_run("mars", SPEC, pool=POOL, max_jobs=3)
    with pytest.raises(TraceError, match="stride_hours"):
        cmp.selection_run(market, SPEC, pool=POOL, stride_hours=0, max_jobs=3, skip_hours=0)
    with pytest.raises(TraceError, match="max_jobs"):
        cmp.selection_run(market, SPEC, pool=POOL, max_jobs=0, skip_hours=0)
    with pytest.raises(TraceError, match="JobSpec"):
        cmp.selection_run(market, {"deadline_h": 8}, pool=POOL, max_jobs=3, skip_hours=0)
    with pytest.raises(PolicyError, match="seed"):
        cmp.selection_run(market, SPEC, pool=POOL, max_jobs=3, seed=-1, skip_hours=0)


# ------------------------------------------------------------------------------------ main comparison


def test_main_comparison_structure_and_resume(market, tmp_path, monkeypatch):
    calls = []
    real = setups.simulate

    def counting(policy, *a, **k):
        calls.append(getattr(policy, "name", "?"))
        return real(policy, *a, **k)

    monkeypatch.setattr(setups, "simulate", counting)
    other = synthetic_market(24 * 4, slot_hours=1.0, requested=4, od_price=3.0, regime="calm", seed=1)
    mk = {"vol": market, "calm": other}
    res = cmp.main_comparison(mk, SPEC, cheap_methods(), stride_hours=4.0, max_jobs=4, seed=5, out_dir=tmp_path, skip_hours=0)
    assert len(calls) == 10 and len(res.computed) == 10
    assert set(res.jobs.columns) >= {"market", "method", "job", "utility", "cost", "completion_h", "seed",
                                     "setup_key", "role"}
    assert (res.jobs["seed"] == 5).all()
    t = res.table
    assert len(t) == 10 and set(t["market"]) == {"vol", "calm"}
    for c in ("mean_utility", "ci95_utility", "mean_cost", "mean_completion_h", "deadline_hit_rate",
              "hard_deadline_hit_rate"):
        assert c in t.columns
    assert t["deadline_hit_rate"].between(0, 1).all()
    od = t[(t["market"] == "vol") & (t["method"] == "on_demand")].iloc[0]
    vol = res.jobs[(res.jobs["market"] == "vol") & (res.jobs["method"] == "on_demand")]
    assert od["mean_utility"] == pytest.approx(vol["utility"].mean())
    assert list(res.improvement["market"]) == ["vol", "calm", "all"]
    assert len(res.setups) == 2 and (res.setups["jobs"] == 4).all()
    assert res.csv.exists() and len(pd.read_csv(res.csv)) == 40

    # resume: nothing recomputed, same numbers
    calls.clear()
    again = cmp.main_comparison(mk, SPEC, cheap_methods(), stride_hours=4.0, max_jobs=4, seed=5, out_dir=tmp_path, skip_hours=0)
    assert calls == [] and again.computed == []
    pd.testing.assert_frame_equal(again.table, res.table)

    # a changed set-up (seed) recomputes and replaces the stale rows; one new method computes only itself
    meth = {**cheap_methods(), "greedy2": ("greedy", {})}
    third = cmp.main_comparison(mk, SPEC, meth, stride_hours=4.0, max_jobs=4, seed=5, out_dir=tmp_path, skip_hours=0)
    assert third.computed == [("vol", "greedy2"), ("calm", "greedy2")]
    fourth = cmp.main_comparison({"vol": market}, SPEC, cheap_methods(), stride_hours=4.0, max_jobs=4, seed=6,
                                 out_dir=tmp_path, skip_hours=0)
    assert len(fourth.computed) == 5
    saved = pd.read_csv(res.csv)
    assert len(saved) == 4 * (6 + 6)  # vol: 5 methods (seed 6) + greedy2 (seed 5); calm: 6 methods (seed 5)
    assert set(saved[(saved["market"] == "vol") & (saved["method"] != "greedy2")]["seed"]) == {6}


def test_main_comparison_partial_rows_are_recomputed(market, tmp_path):
    meth = {"on_demand": ("on_demand", {}), "greedy": ("greedy", {})}
    res = cmp.main_comparison({"m": market}, SPEC, meth, stride_hours=4.0, max_jobs=3, out_dir=tmp_path, skip_hours=0)
    saved = pd.read_csv(res.csv)
    saved.drop(index=saved.index[-1]).to_csv(res.csv, index=False)  # an interrupted write of greedy
    again = cmp.main_comparison({"m": market}, SPEC, meth, stride_hours=4.0, max_jobs=3, out_dir=tmp_path, skip_hours=0)
    assert again.computed == [("m", "greedy")]
    assert len(pd.read_csv(res.csv)) == 6


def hand_jobs() -> pd.DataFrame:
    u = {  # market -> method -> per-job utilities
        "m1": {"A3_select": [120, 100, 80], "on_demand": [50, 50, 50], "greedy": [100, 60, 80],
               "uniform_progress": [90, 90, 90], "optimal": [130, 110, 95]},
        "m2": {"A3_select": [-5, -15], "on_demand": [-30, -30], "greedy": [-20, -20], "uniform_progress": [-40, 0]},
    }
    rows = [{"market": m, "method": k, "job": j, "utility": x} for m, d in u.items() for k, xs in d.items()
            for j, x in enumerate(xs)]
    return pd.DataFrame(rows)


def test_improvement_on_a_hand_made_frame():
    imp = cmp.improvement(hand_jobs()).set_index("market")
    m1 = imp.loc["m1"]  # baselines: od 50, greedy 80, up 90 -> best up 90; A3 mean 100
    assert m1["best_baseline"] == "uniform_progress" and m1["best_baseline_utility"] == 90
    assert m1["mean_improvement"] == pytest.approx(10 / 90)
    assert m1["best_improvement"] == pytest.approx(30 / 90)  # job 0: 120 - 90
    assert m1["share_jobs_better"] == pytest.approx(2 / 3)
    m2 = imp.loc["m2"]  # od -30, greedy -20, up -20 -> tie, first in order wins: greedy; A3 -10
    assert m2["best_baseline"] == "greedy"
    assert m2["mean_improvement"] == pytest.approx(10 / 20)  # relative to |-20|
    assert m2["best_improvement"] == pytest.approx(15 / 20)
    a = imp.loc["all"]
    assert a["mean_improvement"] == pytest.approx(0.5) and a["best_improvement"] == pytest.approx(0.75)
    assert "m2" in a["note"]


def test_improvement_zero_baseline_and_errors():
    jobs = pd.DataFrame({"market": "m", "method": ["A3_select", "greedy"], "job": 0, "utility": [5.0, 0.0]})
    row = cmp.improvement(jobs).iloc[0]
    assert np.isnan(row["mean_improvement"]) and "undefined" in row["note"]
    with pytest.raises(TraceError, match="baselines"):
        cmp.improvement(jobs[jobs["method"] == "A3_select"])
    with pytest.raises(TraceError, match="A3_select"):
        cmp.improvement(jobs[jobs["method"] == "greedy"])
    with pytest.raises(TraceError, match="columns"):
        cmp.improvement(jobs.drop(columns="job"))


def test_comparison_table_ci_and_share_of_optimum():
    jobs = hand_jobs()
    jobs["cost"], jobs["completion_h"] = 1.0, 5.0
    jobs["met_deadline"], jobs["met_hard_deadline"] = True, True
    t = cmp.comparison_table(jobs).set_index(["market", "method"])
    from scipy import stats

    x = np.array([120, 100, 80.0])
    assert t.loc[("m1", "A3_select"), "ci95_utility"] == pytest.approx(stats.t.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3))
    assert t.loc[("m1", "A3_select"), "share_of_optimum"] == pytest.approx(100 / (335 / 3))
    assert np.isnan(t.loc[("m2", "greedy"), "share_of_optimum"])  # no optimum on m2
    with pytest.raises(TraceError, match="columns"):
        cmp.comparison_table(jobs.drop(columns="cost"))


def test_main_comparison_bad_inputs(market, tmp_path):
    with pytest.raises(PolicyError):
        cmp.main_comparison({"m": market}, SPEC, {"x": ("no_such_policy", {})}, max_jobs=2, skip_hours=0)
    with pytest.raises(PolicyError):
        cmp.main_comparison({"m": market}, SPEC, {"x": ("greedy", {"bogus": 1})}, max_jobs=2, skip_hours=0)
    with pytest.raises(PolicyError, match="policy name, params"):
        cmp.main_comparison({"m": market}, SPEC, {"x": "greedy"}, max_jobs=2, skip_hours=0)
    with pytest.raises(PolicyError, match="non-empty"):
        cmp.main_comparison({"m": market}, SPEC, {}, max_jobs=2, skip_hours=0)
    with pytest.raises(TraceError, match="unknown market"):
        cmp.main_comparison(["atlantis"], SPEC, cheap_methods(), max_jobs=2)
    with pytest.raises(TraceError, match="must be a Market"):
        cmp.main_comparison({"m": "calm"}, SPEC, cheap_methods(), max_jobs=2)
    with pytest.raises(TraceError, match="stride_hours"):
        cmp.main_comparison({"m": market}, SPEC, cheap_methods(), stride_hours=-1.0, max_jobs=2, skip_hours=0)
    with pytest.raises(TraceError, match="stride_hours"):  # a per-market stride that misses a market
        cmp.main_comparison({"m": market}, SPEC, cheap_methods(), stride_hours={"other": 2.0}, max_jobs=2, skip_hours=0)
    with pytest.raises(TraceError, match="no markets"):
        cmp.main_comparison({}, SPEC, cheap_methods(), max_jobs=2)


def test_default_methods_are_valid():
    meth = cmp.default_methods(pool="quick", predictor="ets")
    assert set(meth) >= {"A3_select", "A1_chc_ets", "A1_chc_oracle", "A2_prediction_free", "on_demand", "greedy",
                         "uniform_progress", "optimal"}
    assert meth["optimal"][1]["must_finish"] is False
    for name, params in meth.values():
        make_policy(name, params)


def test_a_users_own_trace_is_a_market(tmp_path, dataset):
    """Notebook 07 and the runners take a trace path (or PATH#ZONE) besides the built-in keys; a trace
    without prices needs the user's assumption, stated as od_price / spot_share."""
    from spotlab.errors import TraceError
    from spotlab.experiments import setups

    path = dataset("markets/gcp_a100_counts.csv.gz")
    bare = load_market(f"{path}#asia-northeast1-a")  # loads (availability alone can be forecast) ...
    with pytest.raises(TraceError, match="no spot price for some slots"):  # ... but cannot be simulated
        cut_windows(bare, stride_hours=6, horizon_hours=10, skip_hours=0)
    with pytest.raises(TraceError, match="spot cannot be a share of it"):
        load_market(f"{path}#asia-northeast1-a", spot_share=0.3)
    m = load_market(f"{path}#asia-northeast1-a", od_price=3.67, spot_share=0.3)
    ref = load_market("a100")
    np.testing.assert_array_equal(m.avail, ref.avail)
    np.testing.assert_allclose(m.spot_price, ref.spot_price)
    np.testing.assert_allclose(m.od_price, 3.67)
    with pytest.raises(TraceError, match="missing.csv: no such file"):
        load_market(str(tmp_path / "missing.csv"))
    with pytest.raises(TraceError, match="neither a named market"):
        load_market("missing")
    with pytest.raises(TraceError, match="spot_share must be > 0"):
        load_market(f"{path}#asia-northeast1-a", od_price=3.67, spot_share=-1)
    res = cmp.main_comparison([f"{path}#asia-northeast1-a"], setups.JobSpec(deadline_h=8),
                          {"uniform_progress": ("uniform_progress", {}), "greedy": ("greedy", {})},
                          stride_hours=6, max_jobs=2, od_price=3.67, spot_share=0.3, skip_hours=0)
    assert set(res.jobs["method"]) == {"uniform_progress", "greedy"} and len(res.jobs) == 4
