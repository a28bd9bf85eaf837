"""Notebook 11's experiment: its cells, their table that resumes, and the benchmarks table with the peers' numbers."""

from __future__ import annotations

import numpy as np

from spotlab.experiments import multi_region as mr


def test_the_plan_has_one_cell_per_study_scenario_rules_policy_and_value():
    for quick in (True, False):
        cells = mr.plan(quick)
        assert len({c.key for c in cells}) == len(cells)
        studies = {c.params["study"] for c in cells}
        assert studies == {"benchmark", "one_zone", "zones", "ratio", "checkpoint"}
    full = mr.plan(False)
    bench = [c for c in full if c.params["bench"] == "leaderboard" and c.params["study"] == "benchmark"]
    assert len(bench) == 6 * (2 * len(mr.LEADERBOARD_POLICIES) + 1)  # A1 under the leaderboard's rules only
    alone = [c for c in full if c.params["bench"] == "leaderboard" and c.params["study"] == "one_zone"]
    assert len(alone) == sum(len(zones) for zones, _ in mr.LEADERBOARD_SCENARIOS.values())


def test_cells_resume_and_the_table_shows_the_peers(tmp_path, dataset):
    dataset("sky_spot_traces/adrs-cant-be-late-multi/us-east-2a_v100_1__0.json")
    cells = [c for c in mr.plan(True) if c.params["scenario"] == "all_9_regions"
             and c.params["policy"] in ("round_robin", "up_failover")]
    rows = mr.run_all(cells, tmp_path, n_jobs=1, progress=False)
    again = mr.run_all(cells, tmp_path, n_jobs=1, progress=False)  # read back, not recomputed
    assert rows[["cost"]].equals(again[["cost"]]) and len(rows) == 2 * len(cells)
    table = mr.benchmarks(rows)
    own = table[(table.rules == "leaderboard") & (table.policy == "round_robin")].iloc[0]
    assert own.published == 47.99 and abs(own.rel_diff) < 5e-5  # all 9 regions: both windows, to the cent
    assert np.isnan(table[(table.rules == "spotlab")].published).all()  # not under spotlab's rules


def test_a3_plays_one_of_its_members_in_each_window(tmp_path, dataset):
    """A3's rows are made from its members' rows: each window's is one member's, and its choice is `Select.choose`'s
    on the members' outcomes (the select policy's, without simulating the members twice)."""
    dataset("sky_spot_traces/adrs-cant-be-late-multi/us-east-2a_v100_1__0.json")
    cells = [c for c in mr.plan(True) if c.params["scenario"] == "all_9_regions" and c.params["study"] == "benchmark"
             and c.params["rules"] == "leaderboard" and c.params["policy"] in mr.A3_POOL
             and c.params["policy"] != "chc_zones"]  # A3 over the members that ran (A1 is slow for a test)
    rows = mr.run_all(cells, tmp_path, n_jobs=1, progress=False)
    a3 = rows[rows.policy == "select"]
    assert len(a3) == 2
    members = rows[rows.policy.isin(mr.A3_POOL)]
    for r in a3.itertuples():
        same = members[(members.window == r.window) & np.isclose(members.cost, r.cost)]
        assert len(same) >= 1
