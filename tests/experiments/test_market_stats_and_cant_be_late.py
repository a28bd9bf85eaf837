"""Market statistics on hand-checkable synthetic markets, and the Can't Be Late cross-check (real data)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spotlab.data.locate import dataset_path
from spotlab.errors import DataNotFoundError, TraceError
from spotlab.experiments import cant_be_late as cbl
from spotlab.experiments import market_stats as mk
from spotlab.market.market import Market

START = pd.Timestamp("2024-01-01T00:00Z")


@pytest.fixture
def pattern() -> dict[str, Market]:
    """Two days of 1 h slots. Zone "a" (4 requested): 4 GPUs for 12 h, 0 for 12 h, 2 for 12 h, 4 for 12 h;
    spot price = 0.1 x hour of day. Zone "b" (1 requested): always available, constant prices."""
    a = np.repeat([4, 0, 2, 4], 12)
    hours = np.arange(48) % 24
    return {
        "a": Market(a, 0.1 * hours, 3.0, slot_hours=1.0, requested=4, start=START, meta={"gpu": "X"}),
        "b": Market(np.ones(48, dtype=int), 1.0, 2.0, slot_hours=1.0, requested=1, start=START),
    }


def test_availability_table(pattern):
    t = mk.availability_table(pattern)
    assert len(t) == 96
    a = t[t["zone"] == "a"]
    assert a["frac"].tolist() == [1.0] * 12 + [0.0] * 12 + [0.5] * 12 + [1.0] * 12
    assert a["gpu"].iloc[0] == "X" and a["requested"].iloc[0] == 4
    assert a["time"].iloc[25] == START + pd.Timedelta(hours=25)
    assert a["hours"].iloc[25] == 25.0
    assert set(t.columns) >= {"time", "zone", "gpu", "avail", "frac", "spot_price", "od_price"}


def test_daily_profile(pattern):
    d = mk.daily_profile(pattern).set_index(["zone", "hour"])
    # hours 0-11: (4/4 + 2/4) / 2; hours 12-23: (0/4 + 4/4) / 2
    assert d.loc[("a", 5), "frac_mean"] == pytest.approx(0.75)
    assert d.loc[("a", 17), "frac_mean"] == pytest.approx(0.5)
    assert d.loc[("a", 7), "spot_price_mean"] == pytest.approx(0.7)
    assert d.loc[("a", 7), "count"] == 2
    assert (d.loc["b", "frac_mean"] == 1.0).all()
    assert len(d) == 48


def test_daily_profile_needs_clock():
    m = Market(np.ones(4, dtype=int), 1.0, 2.0, slot_hours=1.0)
    with pytest.raises(TraceError):
        mk.daily_profile({"z": m})


def test_k_available_fraction(pattern):
    k = mk.k_available_fraction(pattern)
    a = k[k["zone"] == "a"].set_index("k")["fraction"]
    assert a.to_dict() == {1: 0.75, 2: 0.75, 3: 0.5, 4: 0.5}
    assert k[k["zone"] == "b"]["k"].tolist() == [1]
    assert mk.k_available_fraction(pattern, ks=[3])["fraction"].tolist() == [0.5, 0.0]


def test_spells_and_lengths(pattern):
    sp = mk.spells(pattern, k=1)
    a = sp[sp["zone"] == "a"]
    assert a["state"].tolist() == ["up", "down", "up"]
    assert a["hours"].tolist() == [12.0, 12.0, 24.0]
    assert a["censored"].tolist() == [True, False, True]

    s = mk.spell_lengths(pattern, k=1).set_index(["zone", "state"])
    assert s.loc[("a", "up"), "mean"] == 18.0 and s.loc[("a", "up"), "count"] == 2
    assert s.loc[("a", "up"), "median"] == 18.0 and s.loc[("a", "up"), "p90"] == pytest.approx(22.8)
    assert s.loc[("a", "down"), "mean"] == 12.0 and s.loc[("a", "down"), "count"] == 1
    assert s.loc[("b", "up"), "mean"] == 48.0
    assert s.loc[("b", "down"), "count"] == 0 and np.isnan(s.loc[("b", "down"), "mean"])

    k3 = mk.spell_lengths(pattern, k=3).set_index(["zone", "state"])
    assert k3.loc[("a", "down"), "mean"] == 24.0 and k3.loc[("a", "up"), "mean"] == 12.0

    inner = mk.spell_lengths(pattern, k=1, include_censored=False).set_index(["zone", "state"])
    assert inner.loc[("a", "up"), "count"] == 0 and inner.loc[("a", "down"), "mean"] == 12.0


def test_autocorrelation_and_summary(pattern):
    acf = mk.autocorrelation(pattern, max_lag_hours=5)
    assert set(acf["zone"]) == {"a"}  # b is constant: no defined autocorrelation
    assert acf["lag_hours"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert acf["acf"].iloc[0] == pytest.approx(1.0)
    assert (np.diff(acf["acf"]) < 0).all()

    s = mk.zone_summary(pattern).set_index("zone")
    assert s.loc["a", "any_available"] == 0.75 and s.loc["a", "all_available"] == 0.5
    assert s.loc["a", "mean_frac"] == pytest.approx((12 + 0 + 6 + 12) / 48)
    assert s.loc["a", "span_hours"] == 48.0


# --------------------------------------------------------------------------------------- real data


def _local(relpath: str) -> Path:
    try:
        return dataset_path(relpath, download=False)
    except DataNotFoundError as exc:
        pytest.skip(f"data not available: {exc}")


def test_load_all_zones_real_data():
    rel = mk.MARKET_FILES["gcp_a100"].relpath
    _local(rel)
    ms = mk.load_all_zones(rel, 1 / 6, zones=["us-east1-b", "europe-west4-a"], max_hours=12)
    assert list(ms) == ["us-east1-b", "europe-west4-a"]
    assert all(len(m) == 72 and m.requested == 4 for m in ms.values())
    assert ms["us-east1-b"].avail.max() == 0
    with pytest.raises(TraceError):
        mk.load_all_zones(rel, 1 / 6, zones=["mars-1a"])


@pytest.fixture
def adrs() -> tuple[Path, Path]:
    return _local(cbl.TRACE_RELPATH), _local(cbl.WINDOWS_RELPATH)


def test_crosscheck_subset_and_resume(adrs, tmp_path, monkeypatch):
    trace, windows = adrs
    out_csv, win_csv = tmp_path / "cc.csv", tmp_path / "w.csv"
    kw = dict(deadlines=(52, 70), policies=("on_demand", "greedy", "uniform_progress"), windows_limit=3,
              out_csv=out_csv, windows_csv=win_csv)
    first = cbl.crosscheck(trace, windows, **kw)
    assert len(first) == 6 and (first["runs"] == 3).all()
    od = first[first["policy"] == "on_demand"]
    all_on_demand = cbl.PUBLISHED_MEAN_COST[(52, "on_demand")]  # the same every window: the subset's mean too
    assert od["our_mean_cost"].to_numpy() == pytest.approx([all_on_demand] * 2, abs=1e-9)
    assert od["published_mean_cost"].tolist() == [all_on_demand] * 2
    assert not first["comparable"].any() and not first["within_tolerance"].any()
    assert len(pd.read_csv(out_csv)) == 6 and len(pd.read_csv(win_csv)) == 6 * 3

    def fail(*a, **k):
        raise AssertionError("run_policy must not be called for rows already in out_csv")

    monkeypatch.setattr(cbl, "run_policy", fail)
    again = cbl.crosscheck(trace, windows, **kw)
    pd.testing.assert_frame_equal(again.drop(columns="seconds"), first.drop(columns="seconds"), check_dtype=False)
    assert len(pd.read_csv(out_csv)) == 6

    # another window count is another experiment: not served from the file
    with pytest.raises(AssertionError, match="must not be called"):
        cbl.crosscheck(trace, windows, **{**kw, "windows_limit": 4})


def test_crosscheck_all_windows_matches_published(adrs):
    trace, windows = adrs
    res = cbl.crosscheck(trace, windows, policies=("on_demand", "greedy", "uniform_progress"))
    assert (res["runs"] == 300).all() and res["comparable"].all()
    assert res["within_tolerance"].all(), res[["deadline", "policy", "our_mean_cost", "published_mean_cost"]]


def test_spell_crosscheck(adrs):
    stats = _local(cbl.STATS_RELPATH)
    df = cbl.spell_crosscheck(adrs[0], stats)
    assert len(df) == 12
    assert df["abs_diff"].max() < 1e-9


def test_sweep_result_flattens_a_table(tmp_path):
    """Notebooks hand their headline numbers to `spotlab sweep` as one flat JSON object."""
    import json

    import pandas as pd

    from spotlab.experiments.figures import sweep_result

    t = pd.DataFrame({"market": ["h100", "calm"], "sigma": [0.0, 0.3], "utility": [1.5, float("nan")],
                      "ok": [True, False], "note": ["a", "b"], "obj": [[1], [2]]})
    flat = sweep_result(tmp_path, t, ["market", "sigma"])
    assert flat == {"h100/0.0/utility": 1.5, "h100/0.0/ok": True, "h100/0.0/note": "a",
                    "calm/0.3/utility": None, "calm/0.3/ok": False, "calm/0.3/note": "b"}
    assert json.loads((tmp_path / "sweep_result.json").read_text()) == flat
