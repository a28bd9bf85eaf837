"""Notebook 11's experiment (SPEC §9): the two benchmarks across zones under their own rules and spotlab's, with the
peers' numbers beside ours, and what the cost of a job across zones depends on: the number of zones, the deadline
ratio and the checkpoint a move carries.

Each (study, scenario, rules, policy, swept value) is one cell of `cells.run`: its rows (one per window) are
appended to `11_runs.csv` as it finishes, so a stopped run resumes. `plan(quick)` lists the cells; `benchmarks`
and `sweeps` read the rows back into the notebook's tables.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..market.zoned_episodes import ZonedEpisodes
from .cells import Cell, Table, run
from .outputs import FIGURE, declare
from .zone_benchmarks import (
    LEADERBOARD_SCENARIOS,
    SHARED_SIX,
    SKYNOMAD_CHECKPOINT_GB,
    SKYNOMAD_WINDOWS,
    leaderboard_scenario,
    published,
    skynomad_scenario,
)

OUTPUTS = declare("11", runs="csv", benchmarks=("csv", "json"), one_zone="csv", peers=FIGURE, algorithms=FIGURE,
                  zones=FIGURE, ratio=FIGURE,
                  checkpoint=FIGURE)
COLUMNS = ("key", "study", "bench", "scenario", "zone", "rules", "policy", "x", "window", "cost", "completion_h",
           "deadline_met")
# The baselines, A2 across zones (prediction_free_zones) and the optimum under both rule sets; A1 (chc_zones, on
# persistence forecasts) where its zones DP is quick: the leaderboard's own rules fold its zones into one, SkyNomad's
# windows are short (under spotlab's rules on the leaderboard a window's plans take minutes: not run); A1 on perfect
# forecasts beside the optimum under spotlab's rules; A3 (select) made from its members' rows (`a3_rows`).
LEADERBOARD_POLICIES = ("round_robin", "up_failover", "up_probe", "up_probe_cost", "prediction_free_zones", "optimal")
SKYNOMAD_POLICIES = ("up_failover", "up_probe", "up_probe_cost", "prediction_free_zones", "chc_zones", "optimal")
A1_ORACLE = "chc_zones_oracle"
VARIANTS = {A1_ORACLE: ("chc_zones", {"predictor": "oracle", "price_predictor": "oracle"})}
A3_POOL = ("chc_zones", "prediction_free_zones", "up_failover", "up_probe", "up_probe_cost")
SWEEP_POLICIES = ("up_failover", "optimal")
RATIOS = (1.1, 1.2, 1.35, 1.5, 1.75, 2.0)
CHECKPOINTS_GB = (0.0, 10.0, 50.0, 200.0, 1000.0)
PEER_TOLERANCE = 0.005  # the peers' numbers reproduced within 0.5% under their rules (issue 40)


def _cell(study: str, bench: str, scenario: str, rules: str, policy: str, x: float, zone: str = "",
          **params: Any) -> Cell:
    """One cell; `zone`, where given, runs the job in that zone of the scenario alone."""
    labels = {"study": study, "bench": bench, "scenario": scenario, "zone": zone, "rules": rules, "policy": policy,
              "x": x}
    return Cell("multi_region", {**labels, **params}, labels=labels)


def plan(quick: bool = False) -> list[Cell]:
    """Every cell of the notebook: the benchmarks (each scenario under its own rules and spotlab's, SkyNomad's
    one-zone UP per zone) and the sweeps on SkyNomad's shared six zones (ratio 1.5 unless swept). Quick: two
    windows of two leaderboard scenarios (A1 on SkyNomad's only) and of SkyNomad's, and the sweeps' ends."""
    windows = (0, 1) if quick else None
    cells = []
    keys = ("2_zones_same_region", "all_9_regions") if quick else tuple(LEADERBOARD_SCENARIOS)
    for key in keys:
        for rules in ("leaderboard", "spotlab"):
            a1 = ("chc_zones",) if rules == "leaderboard" and not quick else ()  # quick: A1 on SkyNomad's only
            for policy in LEADERBOARD_POLICIES + a1:
                cells.append(_cell("benchmark", "leaderboard", key, rules, policy, 0.0, windows=windows))
        for zone in LEADERBOARD_SCENARIOS[key][0]:  # the best one-zone uniform progress, under spotlab's rules
            cells.append(_cell("one_zone", "leaderboard", key, "spotlab", "uniform_progress", 0.0, zone=zone,
                               windows=windows))
    for ratio in ((1.5,) if quick else (1.5, 1.2)):
        for rules in ("skynomad", "spotlab"):
            for policy in SKYNOMAD_POLICIES + ((A1_ORACLE,) if rules == "spotlab" else ()):
                cells.append(_cell("benchmark", "skynomad", "+".join(SHARED_SIX), rules, policy, ratio,
                                   windows=windows))
        for zone in SHARED_SIX:
            cells.append(_cell("one_zone", "skynomad", "+".join(SHARED_SIX), "spotlab", "uniform_progress", ratio,
                               zone=zone, windows=windows))
    for zone in (SHARED_SIX[:2] if quick else SHARED_SIX):
        cells.append(_cell("benchmark", "skynomad", zone, "skynomad", "uniform_progress", 1.5, windows=windows))
    for k in ((1, 6) if quick else range(1, len(SHARED_SIX) + 1)):
        for policy in SWEEP_POLICIES:
            cells.append(_cell("zones", "skynomad", "+".join(SHARED_SIX[:k]), "skynomad", policy, float(k),
                               windows=windows))
    for ratio in ((1.2, 2.0) if quick else RATIOS):
        for policy in SWEEP_POLICIES:
            cells.append(_cell("ratio", "skynomad", "+".join(SHARED_SIX), "skynomad", policy, ratio,
                               windows=windows))
    for gb in ((0.0, 1000.0) if quick else CHECKPOINTS_GB):
        for policy in SWEEP_POLICIES:
            cells.append(_cell("checkpoint", "skynomad", "+".join(SHARED_SIX), "spotlab", policy, gb,
                               windows=windows))
    return cells


def _scenario(p: dict) -> tuple[Any, Any]:
    """A cell's scenario and the rule set it runs under."""
    from ..policies.semantics import semantics_for

    windows = None if p["windows"] is None else list(p["windows"])
    if p["bench"] == "leaderboard":
        sc = leaderboard_scenario(p["scenario"], windows=windows)
        if p.get("zone"):  # one zone of the scenario, the job alone there
            k = sc.episodes.names.index(p["zone"])
            sc = replace(sc, episodes=ZonedEpisodes((sc.episodes.zones[k],), (p["zone"],), (sc.episodes.regions[k],)))
    else:
        ratio = p["x"] if p["study"] in ("benchmark", "ratio", "one_zone") else 1.5
        gb = p["x"] if p["study"] == "checkpoint" else SKYNOMAD_CHECKPOINT_GB
        zones = (p["zone"],) if p.get("zone") else tuple(p["scenario"].split("+"))
        sc = skynomad_scenario(zones, ratio, windows=windows, checkpoint_gb=gb)
    rules = sc.semantics if p["rules"] == sc.semantics.rules else semantics_for(None, p["rules"])
    return sc, rules


def _compute(cell: Cell) -> pd.DataFrame:
    from ..policies.run import run_policy

    sc, rules = _scenario(cell.params)
    name, params = VARIANTS.get(cell.params["policy"], (cell.params["policy"], {}))
    res = run_policy(name, params, sc.episodes, sc.job, rules)
    return pd.DataFrame({"window": np.arange(sc.episodes.n), "cost": res.cost, "completion_h": res.completion_h,
                         "deadline_met": res.met_hard_deadline})


def run_all(cells: Sequence[Cell], out_dir: str | Path, resume: bool = True, n_jobs: int = 1,
            progress: bool | None = None) -> pd.DataFrame:
    """Every cell's rows, read back from `out_dir/11_runs.csv` where finished, the rest computed and appended."""
    table = Table(Path(out_dir) / OUTPUTS.runs.csv, columns=COLUMNS, key="key", owner="notebook 11")
    parts = run(cells, _compute, table, n_jobs=n_jobs, resume=resume, progress=progress)
    rows = pd.concat(parts, ignore_index=True)
    return pd.concat([rows, a3_rows(rows)], ignore_index=True)


def a3_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """A3 (`select` over the members of `A3_POOL` that ran, its defaults) on every benchmark scenario and rule set:
    its member per window chosen by `Select.choose` from the members' outcomes, and that member's row as its own
    (what the select policy plays; the members are not simulated twice)."""
    from ..policies.select import Select, settled_slots
    from ..simulation.slots import horizon_slots

    out = []
    bench = rows[(rows.study == "benchmark") & rows.policy.isin(A3_POOL)]
    for (b, scen, x, rules), g in bench.groupby(["bench", "scenario", "x", "rules"], sort=False):
        pool = tuple(p for p in A3_POOL if p in set(g.policy))  # A1 where it ran
        if len(pool) < 2:
            continue
        windows = sorted(g.window.unique())
        params = {"bench": b, "scenario": scen, "x": x, "rules": rules, "study": "benchmark",
                  "windows": None if len(windows) == _all_windows(b, scen) else windows}
        sc, sem = _scenario(params)
        job, ep = sc.job, sc.episodes
        horizon = min(int(ep.length.max()), horizon_slots(job, ep.slot_hours))
        by = {pol: g[g.policy == pol].set_index("window").loc[windows].reset_index() for pol in pool}
        done = {pol: np.where(by[pol].deadline_met.to_numpy(bool), by[pol].completion_h.to_numpy(float), np.nan)
                for pol in pool}
        U = np.stack([np.array([job.value_at(c) if np.isfinite(c) else -job.miss_penalty for c in done[pol]])
                      - by[pol].cost.to_numpy(float) for pol in pool], axis=1)
        settled = np.stack([settled_slots(by[pol].completion_h.to_numpy(float), ep.slot_hours, horizon)
                            for pol in pool], axis=1)
        sel = Select(pool=[(pol, {}) for pol in pool])
        chosen = sel.choose(U, None, ep, job, horizon, settled=settled, settings=sem.settings).chosen
        for r, k in enumerate(chosen):
            row = by[pool[k]].iloc[r].to_dict()
            row.update(window=windows[r], policy="select", key=f"select/{b}/{scen}/{x}/{rules}/{windows[r]}")
            out.append(row)
    return pd.DataFrame(out, columns=list(rows.columns))


def _all_windows(bench: str, scenario: str) -> int:
    return len(LEADERBOARD_SCENARIOS[scenario][1]) if bench == "leaderboard" else SKYNOMAD_WINDOWS


def _peer_name(bench: str, scenario: str, x: float) -> str:
    """The scenario's name as `zone_benchmarks.scenario` spells it."""
    return f"leaderboard/{scenario}" if bench == "leaderboard" else f"skynomad/{x:g}/{scenario}"


def benchmarks(rows: pd.DataFrame) -> pd.DataFrame:
    """Per scenario, rule set and policy: windows, mean cost, deadlines met, and the peers' published mean
    where there is one (their rules, all the benchmark's windows)."""
    b = rows[rows.study == "benchmark"]
    out = b.groupby(["bench", "scenario", "x", "rules", "policy"], sort=False).agg(
        windows=("cost", "size"), mean_cost=("cost", "mean"), deadlines_met=("deadline_met", "mean")).reset_index()
    pub = []
    for r in out.itertuples():
        own = r.rules == ("leaderboard" if r.bench == "leaderboard" else "skynomad")
        whole = r.windows == (len(LEADERBOARD_SCENARIOS[r.scenario][1]) if r.bench == "leaderboard"
                              else SKYNOMAD_WINDOWS)
        value = published(_peer_name(r.bench, r.scenario, r.x), r.policy) if own and whole else None
        pub.append(np.nan if value is None else value)
    out["published"] = pub
    out["rel_diff"] = out.mean_cost / out.published - 1
    return out


def one_zone(rows: pd.DataFrame) -> pd.DataFrame:
    """Per scenario (and ratio): uniform progress alone in each of its zones under spotlab's rules, and which zone
    is best (the bar A3 is held to beside UP(S))."""
    z = rows[rows.study == "one_zone"]
    out = z.groupby(["bench", "scenario", "x", "zone"], sort=False).agg(
        windows=("cost", "size"), mean_cost=("cost", "mean"), deadlines_met=("deadline_met", "mean")).reset_index()
    out["best"] = out.mean_cost == out.groupby(["bench", "scenario", "x"]).mean_cost.transform("min")
    return out


def sweep(rows: pd.DataFrame, study: str) -> pd.DataFrame:
    """One sweep's mean cost and deadlines met per policy and swept value."""
    s = rows[rows.study == study]
    return s.groupby(["policy", "x"]).agg(mean_cost=("cost", "mean"),
                                          deadlines_met=("deadline_met", "mean")).reset_index()
