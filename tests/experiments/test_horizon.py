"""The horizon experiments (SPEC §7 items 3-5) on tiny synthetic set-ups: structure, resume, seeds, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spotlab.errors import SpotlabError, TraceError
from spotlab.experiments import horizon as hz
from spotlab.experiments import setups as su

SPEC = su.JobSpec(deadline_h=6.0, gamma=1.5, load=0.5, n_max=4)
KW = dict(hours=48, history_hours=12, stride_hours=6.0, max_jobs=2)


@pytest.fixture(scope="module")
def volatile():
    return hz.prepare("volatile", SPEC, **KW)


@pytest.fixture
def count_sims(monkeypatch):
    """Count the simulations `run_methods` starts (n_jobs=1 keeps them in this process)."""
    calls = []
    real = su.simulate

    def counting(policy, *a, **k):
        calls.append(getattr(policy, "name", type(policy).__name__))
        return real(policy, *a, **k)

    monkeypatch.setattr(su, "simulate", counting)
    return calls


def test_prepare_records_the_setup(volatile):
    assert volatile.episodes.n == 2
    d = volatile.describe
    assert d["market_key"] == "volatile" and d["market_seed"] == 0 and d["stride_hours"] == 6.0
    assert d["jobs"] == 2 and d["n_max"] == 4 and d["deadline_h"] == 6.0


def test_motivation_structure_seed_and_setup(volatile):
    df = hz.motivation([volatile], sigmas=(0.0, 0.5), w=3, v=1, seed=3)
    methods = ["optimum", "A1 σ=0", "A1 σ=0.5", "A2", "uniform_progress"]
    assert list(dict.fromkeys(df["method"])) == methods
    assert len(df) == len(methods) * volatile.episodes.n
    assert list(df.columns) == hz.COLUMNS
    assert (df["seed"] == 3).all()
    assert (df["setup_market"] == volatile.market.name).all()
    assert (df["setup_jobs"] == 2).all()
    a1 = df[df["family"] == "A1"]
    assert sorted(a1["sigma"].unique()) == [0.0, 0.5] and (a1["w"] == 3).all() and (a1["v"] == 1).all()
    assert df[df["method"] == "A2"]["sigma"].isna().all()
    assert not df[df["method"] == "A2"]["forecast"].any() and a1["forecast"].all()
    assert np.allclose(df["utility"], df["value"] - df["cost"])
    # the optimum bills whole slots in its MILP: it is an upper bound up to one slot's fractional billing and
    # the value lost within one slot past the soft deadline (see the module docstring)
    job, dt = volatile.job, volatile.episodes.slot_hours
    slack = job.n_max * float(np.nanmax(volatile.episodes.od_price)) * dt \
        + job.value * dt / (job.hard_deadline_h - job.deadline_h) + 1e-6
    opt = df[df["method"] == "optimum"].set_index("job")["utility"]
    for _, g in df[df["method"] != "optimum"].groupby("method"):
        assert (opt - g.set_index("job")["utility"] >= -slack).all()


def test_resume_reuses_cells_and_recomputes_changes(volatile, tmp_path, count_sims):
    csv = tmp_path / "m.csv"
    first = hz.motivation([volatile], sigmas=(0.0,), w=3, v=1, include_optimum=False, out_csv=csv)
    assert len(count_sims) == 3  # A1, A2, uniform progress
    assert len(pd.read_csv(csv)) == 3 * volatile.episodes.n
    again = hz.motivation([volatile], sigmas=(0.0,), w=3, v=1, include_optimum=False, out_csv=csv)
    assert len(count_sims) == 3, "a second call must read the CSV, not simulate again"
    pd.testing.assert_frame_equal(first, again)
    # a new sigma adds one cell; the others are reused
    hz.motivation([volatile], sigmas=(0.0, 0.4), w=3, v=1, include_optimum=False, out_csv=csv)
    assert len(count_sims) == 4 and count_sims[-1] == "chc"
    # another seed is another configuration: everything is recomputed, nothing stale is mixed in
    other = hz.motivation([volatile], sigmas=(0.0,), w=3, v=1, include_optimum=False, seed=1, out_csv=csv)
    assert len(count_sims) == 7 and (other["seed"] == 1).all()
    # an interrupted cell (fewer jobs than the set-up has) is recomputed
    rows = pd.read_csv(csv)
    drop = rows.index[(rows["method"] == "A2") & (rows["seed"] == 0)][0]
    rows.drop(index=drop).to_csv(csv, index=False)
    hz.motivation([volatile], sigmas=(0.0,), w=3, v=1, include_optimum=False, out_csv=csv)
    assert count_sims[7:] == ["prediction_free"]


def test_resume_refuses_a_foreign_csv(volatile, tmp_path):
    csv = tmp_path / "x.csv"
    pd.DataFrame({"a": [1]}).to_csv(csv, index=False)
    with pytest.raises(hz.ExperimentError, match="not a results file"):
        hz.motivation([volatile], sigmas=(0.0,), include_optimum=False, out_csv=csv)


def test_error_sensitivity_a2_flat_and_a3_plays_pool_members(volatile):
    variants = [(3, 1), (3, 3)]
    df = hz.error_sensitivity(volatile, sigmas=[0.0, 0.5], chc_variants=variants, a2_pool=[{}])
    assert set(df["method"]) == {"A1 w=3 v=1", "A1 w=3 v=3", "A2", "A3 select"}
    a2 = df[df["method"] == "A2"]
    assert sorted(a2["sigma"].unique()) == [0.0, 0.5]  # repeated at every sigma ...
    u = a2.pivot(index="job", columns="sigma", values="utility")
    assert np.allclose(u[0.0], u[0.5])  # ... and flat
    # the pool is exactly the A1 variants at that sigma plus A2 (a2_pool=[{}]): every A3 round plays one
    # of them, so its per-job utility is one of theirs
    for (sigma, job), g in df.groupby(["sigma", "job"]):
        a3 = float(g[g["method"] == "A3 select"]["utility"].iloc[0])
        members = g[g["method"] != "A3 select"]["utility"].to_numpy()
        assert np.isclose(members, a3, atol=1e-6).any(), (sigma, job)
    # A3 read from its members' cells is A3 simulated: the selector's choices and every outcome, to the bit
    replayed = hz.error_sensitivity(volatile, sigmas=[0.0, 0.5], chc_variants=variants, a2_pool=[{}],
                                    reuse_members=False)
    key = ["sigma", "method", "job"]
    a = df.sort_values(key).reset_index(drop=True)
    b = replayed.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    pool = hz.select_pool(variants, 0.5, [{"theta": 0.4}])
    assert pool == [("chc", hz.chc_params(3, 1, 0.5)), ("chc", hz.chc_params(3, 3, 0.5)),
                    ("prediction_free", {"theta": 0.4})]
    assert all(p["predictor"] == "oracle" and p["sigma"] == 0.5 for n, p in pool if n == "chc")


def test_commitment_grid_pairs(volatile):
    df = hz.commitment_grid(volatile, ws=[1, 3], vs=[1, 2, 3], sigmas=0.0)
    a1 = df[df["family"] == "A1"]
    pairs = sorted({(int(w), int(v)) for w, v in zip(a1["w"], a1["v"])})
    assert pairs == [(1, 1), (3, 1), (3, 2), (3, 3)]
    assert "A2" in set(df["method"]) and (df["sigma"] == 0.0).all()
    s = hz.summarize(df)
    assert len(s) == 5 and (s["n"] == 2).all()


def test_summarize_and_paired_numbers():
    df = pd.DataFrame({
        "market": "m", "sigma": np.nan, "method": ["a"] * 3 + ["b"] * 3, "family": "x", "w": np.nan,
        "v": np.nan, "seed": 0, "job": [0, 1, 2] * 2, "utility": [1.0, 2.0, 6.0, 2.0, 4.0, 6.0],
        "cost": [3.0, 2.0, 1.0, 1.0, 1.0, 1.0], "value": 4.0, "met_deadline": True, "met_hard_deadline": True,
        "completion_h": 1.0})
    s = hz.summarize(df, by=("market", "method")).set_index("method")
    half = 4.302652729911275 * np.std([1, 2, 6], ddof=1) / np.sqrt(3)  # t(0.975, 2)
    assert s.loc["a", "utility"] == pytest.approx(3.0)
    assert s.loc["a", "ci_hi"] - s.loc["a", "utility"] == pytest.approx(half)
    p = hz.paired(df, reference="a", by=("market", "method")).set_index("method")
    assert p.loc["b", "d_utility"] == pytest.approx(1.0)  # (1 + 2 + 0) / 3
    assert p.loc["b", "not_worse"] == pytest.approx(1.0)
    assert p.loc["b", "d_cost"] == pytest.approx(-1.0)
    with pytest.raises(hz.ExperimentError, match="reference"):
        hz.paired(df, reference="zzz")


def test_bad_inputs_give_clear_errors(volatile):
    with pytest.raises(hz.ExperimentError, match="cannot exceed"):
        hz.error_sensitivity(volatile, sigmas=[0.0], chc_variants=[(2, 3)])
    with pytest.raises(hz.ExperimentError, match=">= 0"):
        hz.motivation([volatile], sigmas=(-0.1,))
    with pytest.raises(hz.ExperimentError, match="at least one"):
        hz.commitment_grid(volatile, ws=[2], sigmas=[])
    with pytest.raises(hz.ExperimentError, match="no \\(w, v\\) pair"):
        hz.commitment_grid(volatile, ws=[1], vs=[2])
    with pytest.raises(hz.ExperimentError, match="one market"):
        hz.error_sensitivity(["calm", "volatile"], sigmas=[0.0])
    with pytest.raises(hz.ExperimentError, match="seed"):
        hz.motivation([volatile], sigmas=(0.0,), seed=-1)
    with pytest.raises(hz.ExperimentError, match="distinct"):
        hz.motivation([volatile, volatile], sigmas=(0.0,))
    with pytest.raises(TraceError, match="unknown market"):
        hz.prepare("nowhere", SPEC, **KW)
    with pytest.raises(hz.ExperimentError, match="one of flipflop, adahedge, hedge, exp3"):
        hz.error_sensitivity(volatile, sigmas=[0.0], chc_variants=[(2, 1)], algorithm="ucb")
    assert issubclass(hz.ExperimentError, SpotlabError)


@pytest.mark.parametrize("market, seed", [("calm", 1), ("volatile", 2)])
def test_a3_from_member_cells_equals_a3_simulated(market, seed):
    """With warm-up rounds from the history and rounds whose feedback is delayed (overlapping jobs), A3 read from
    its members' cells gives exactly the rows of simulating `select`, on other markets and seeds."""
    from spotlab.policies.select import warmup_episodes
    from spotlab.simulation.slots import horizon_slots

    setup = hz.prepare(market, SPEC, hours=96, history_hours=30, stride_hours=3.0, max_jobs=8, market_seed=seed)
    assert warmup_episodes(setup.episodes, horizon_slots(setup.job, setup.episodes.slot_hours)) is not None
    kw = dict(sigmas=[0.3], chc_variants=[(2, 1), (4, 2)], a2_pool=[{}, {"theta": 0.8, "sigma": 0.9}], seed=seed)
    key = ["sigma", "method", "job"]
    a = hz.error_sensitivity(setup, **kw).sort_values(key).reset_index(drop=True)
    b = hz.error_sensitivity(setup, reuse_members=False, **kw).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)
    assert a[a["method"] == "A3 select"]["job"].tolist() == list(range(setup.episodes.n))
