"""Cross-check against the Can't Be Late simulator's published numbers (SPEC §3.2, §7 item 8).

Our simulator in its compatibility mode, with our re-implementations of Greedy, Uniform Progress
and the hindsight optimum, must reproduce the mean costs that simulator reports on the same 300
real windows (within 1%). A mismatch here means a semantic difference (billing, overhead,
safety net) that would silently bias every other comparison.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..jobs.job import make_job
from ..market.episodes import Episodes
from ..market.load import load_market
from ..market.windows import cut_windows
from ..policies.run import run_policy
from ..policies.semantics import semantics_for
from .cells import Cell, Done, Table, append_rows, run
from .market_stats import spell_lengths
from .outputs import FIGURE, declare
from .published import CANT_BE_LATE_MEAN_COST as PUBLISHED_MEAN_COST
from .published import CANT_BE_LATE_SETUP as PUBLISHED_SETUP
from .published import CANT_BE_LATE_TOLERANCE as TOLERANCE

ADRS_DIR = "sky_spot_traces/adrs-cant-be-late-traces/"
TRACE_RELPATH = ADRS_DIR + "ping_based__us-west-2a_v100_1.json"
WINDOWS_RELPATH = ADRS_DIR + "random_start__us-west-2a_v100_1__windows.csv"
STATS_RELPATH = ADRS_DIR + "ping_based__stats.tsv"

# what notebook 01b writes
OUTPUTS = declare("01b", crosscheck=("csv", "json"), window_costs="csv", ours_vs_published=FIGURE,
                  window_costs_52h=FIGURE, spell_stats="csv")
POLICIES = ("on_demand", "greedy", "uniform_progress", "optimal")

SUMMARY_COLUMNS = [
    "deadline", "policy", "our_mean_cost", "published_mean_cost", "rel_diff", "runs", "comparable",
    "within_tolerance", "deadline_met_fraction", "work_hours", "overhead", "od_price", "spot_price",
    "solver", "seconds",
]
WINDOW_COLUMNS = ["deadline", "policy", "window", "cost", "completion_h", "met_deadline"]
_KEY_FLOATS = ("work_hours", "overhead", "od_price", "spot_price")


def _subset(ep: Episodes, n: int) -> Episodes:
    """The first n windows (the published windows are in a fixed order, so this is reproducible)."""
    return replace(ep, avail=ep.avail[:n], spot_price=ep.spot_price[:n], od_price=ep.od_price[:n],
                   length=ep.length[:n], names=ep.names[:n])


def _comparable(runs: int, setup: dict) -> bool:
    return runs == PUBLISHED_SETUP["runs"] and all(
        np.isclose(setup[k], PUBLISHED_SETUP[k], rtol=0, atol=1e-9) for k in _KEY_FLOATS
    )


def _within(policy: str, rel: float) -> bool:
    if policy == "optimal":
        return rel <= TOLERANCE
    return abs(rel) <= TOLERANCE


def crosscheck(
    trace: str | Path,
    windows: str | Path,
    deadlines: Sequence[float] = (52, 70),
    work_hours: float = PUBLISHED_SETUP["work_hours"],
    overhead: float = PUBLISHED_SETUP["overhead"],
    od_price: float = PUBLISHED_SETUP["od_price"],
    spot_price: float = PUBLISHED_SETUP["spot_price"],
    policies: Sequence[str] = POLICIES,
    windows_limit: int | None = None,
    solver: str = "highs",
    out_csv: str | Path | None = None,
    windows_csv: str | Path | None = None,
    verbose: bool = False,
) -> pd.DataFrame:
    """Mean cost of each policy per deadline on the windows of `trace`, next to the published number.

    `windows_limit` keeps the first N windows (a quick check; such rows are `comparable=False`, and
    `within_tolerance` is only ever True for comparable rows: |rel_diff| <= 1% for the simulated
    baselines; for `optimal` only "no more than 1% above" counts, since an exact optimum may beat the
    published omniscient policy but never the other way round).
    With `out_csv`, each (deadline, policy) row is appended as soon as it is computed and rows
    already there for the same windows and setup are reused, so an interrupted run resumes;
    `windows_csv` likewise receives the per-window costs of the cells computed in this call.
    """
    market = load_market(trace, spot_price=spot_price, od_price=od_price)
    episodes = cut_windows(market, windows=windows)
    ep = episodes if windows_limit is None else _subset(episodes, int(windows_limit))
    settings = semantics_for(market)
    setup = {"work_hours": float(work_hours), "overhead": float(overhead), "od_price": float(od_price),
             "spot_price": float(spot_price)}
    out_path = None if out_csv is None else Path(out_csv)
    win_path = None if windows_csv is None else Path(windows_csv)
    comparable = _comparable(ep.n, setup)
    cells = [Cell("crosscheck", {"deadline": deadline, "policy": policy, "runs": ep.n, **setup,
                                 "solver": solver if policy == "optimal" else ""},
                  {"deadline": deadline, "policy": policy, "runs": ep.n, **setup})
             for deadline in deadlines for policy in policies]
    table = None if out_path is None else Table(out_path, tuple(SUMMARY_COLUMNS), unique=("deadline", "policy"))

    def compute(cell: Cell) -> tuple[pd.DataFrame, pd.DataFrame]:
        deadline, policy = cell.params["deadline"], cell.params["policy"]
        job = make_job(work_hours, deadline, overhead_hours=overhead)
        params = {"solver": solver} if policy == "optimal" else {}
        t0 = time.perf_counter()
        res = run_policy(policy, params, ep, job, settings)
        secs = time.perf_counter() - t0
        ours = float(np.mean(res.cost))
        pub = PUBLISHED_MEAN_COST.get((int(deadline), policy), np.nan) if float(deadline).is_integer() else np.nan
        rel = (ours - pub) / pub if np.isfinite(pub) else np.nan
        comp = bool(comparable and np.isfinite(pub))
        row = {
            "deadline": deadline, "policy": policy, "our_mean_cost": ours, "published_mean_cost": pub,
            "rel_diff": rel, "runs": ep.n, "comparable": comp,
            "within_tolerance": bool(comp and _within(policy, rel)),
            "deadline_met_fraction": float(np.mean(res.met_deadline)), **setup,
            "solver": solver if policy == "optimal" else "", "seconds": secs,
        }
        per = pd.DataFrame({"deadline": deadline, "policy": policy, "window": np.arange(ep.n), "cost": res.cost,
                            "completion_h": res.completion_h, "met_deadline": res.met_deadline})
        return pd.DataFrame([row], columns=SUMMARY_COLUMNS), per[WINDOW_COLUMNS]

    def done(cell: Cell, d: Done) -> None:
        deadline, policy = cell.params["deadline"], cell.params["policy"]
        if d.computed and win_path is not None:
            append_rows(win_path, d.extra)
        if not verbose:
            return
        if not d.computed:
            print(f"deadline {deadline:g} h, {policy}: reused from {out_path}")
            return
        r = d.rows.iloc[-1]
        print(f"deadline {deadline:g} h, {policy}: {r['our_mean_cost']:.2f} (published {r['published_mean_cost']:.2f}) "
              f"in {r['seconds']:.1f} s")

    rows = [part.iloc[-1].to_dict() for part in run(cells, compute, table, progress=False, on_done=done)]
    out = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    for col in ("comparable", "within_tolerance"):
        out[col] = out[col].astype(str).str.lower().isin(("true", "1")).to_numpy()
    out["runs"] = out["runs"].astype(int)
    out["solver"] = [s if isinstance(s, str) else "" for s in out["solver"]]
    return out


def spell_crosscheck(trace: str | Path, stats_tsv: str | Path, env: str | None = None) -> pd.DataFrame:
    """Our spot lifetime / wait statistics of a ping_based trace vs the release's `ping_based__stats.tsv`.

    A check that the trace is read with the right convention (1 = preempted) and that our spell
    statistics mean what the Can't Be Late authors mean by lifetime and wait time.
    """
    trace = Path(trace)
    env = env or trace.name.removeprefix("ping_based__").removesuffix(".json")
    market = load_market(trace, convention="preempted")
    ours = spell_lengths({env: market}, k=1).set_index("state")
    pub = pd.read_csv(stats_tsv, sep="\t")
    pub = pub[pub["env"].str.removesuffix(".json") == env]
    if pub.empty:
        raise KeyError(f"{stats_tsv}: no row for env {env!r}")
    pub = pub.iloc[0]
    rows = []
    for state, label in (("up", "lifetime"), ("down", "wait_time")):
        for stat in ("avg", "std", "max", "min", "p25", "p75"):
            col = "mean" if stat == "avg" else stat
            rows.append({"env": env, "statistic": f"{stat}_{label}", "ours_hours": float(ours.loc[state, col]),
                         "published_hours": float(pub[f"{stat}_{label}"])})
    df = pd.DataFrame(rows)
    df["abs_diff"] = (df["ours_hours"] - df["published_hours"]).abs()
    return df
