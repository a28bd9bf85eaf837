"""Policy selection and the main comparison: the library side of notebooks 06 and 07 (SPEC §6, §7 items 6-7).

**Selection (notebook 06).** `selection_run` runs A3 (`select`) on jobs one after another on one market
(`market.windows.cut_windows`): a round is a job. It returns the per-round frame (the weight of every pool member
before the round, the member drawn, every member's utility, the selector's expected and realised utility,
the cumulative expected regret against the best fixed member so far, the Hedge bound) and a summary (rounds,
final regret, the log-log slope of regret vs rounds from `selection.loglog_slope`, the anytime Hedge bound
`regret_bound_hedge` at T, the best member). `selection_runs` does the FlipFlop / AdaHedge / Hedge / EXP3 ablation: the
pool is replayed once (by simulating `select` with the first algorithm); the other algorithms are run on the same
recorded member utilities with the same utility range and seed, which is exactly what `select` with that
algorithm would do (the replay does not depend on the algorithm; a test checks the equality).

**Main comparison (notebook 07).** `main_comparison` simulates A3 (default pool), A1 (CHC with a real
forecaster, and with the perfect-foresight oracle as a reference), A2 (prediction-free, default
parameters), the baselines (on-demand, Greedy, Uniform Progress) and the hindsight optimum
(`must_finish=False`, the upper bound) on the same job episodes of each market, through
`setups.run_methods`. Per-job rows are appended to `<prefix>_comparison_jobs.csv` in `out_dir` as each
(market, method) finishes (`cells.run`), tagged with a setup key (hash of the market, job, episodes, seed and
method parameters); a later call with the same set-up skips the pairs already there, so an interrupted run
resumes. The files notebooks 06 and 07 write are `SELECTION` and `MAIN`. `comparison_table` summarises per (market, method); `improvement` gives A3 against the best
baseline of each market.

Improvement [ours: the paper gives "up to 54.8%" without the formula]: the best baseline of a market is the
one of on-demand / Greedy / Uniform Progress with the highest mean utility there. The *mean improvement* is
``(mean U_A3 - mean U_best) / |mean U_best|``; the *best improvement* is the largest per-job gain
``max_j (U_A3,j - U_best,j) / |mean U_best|`` (per-job gains over the same market's mean, so that a job where
the baseline happens to earn about 0 does not blow the ratio up). The paper's "up to" reads as the largest
mean improvement over the settings (markets) evaluated, which `improvement` reports as the `all` row.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import PolicyError, TraceError
from ..market.market import Market
from ..market.named import MARKET_SPECS
from ..market.windows import cut_windows
from ..params import check_seed
from ..policies.registry import make_policy, resolved_params
from ..policies.regret import loglog_slope, regret_bound_hedge
from ..policies.select import ALGORITHMS, known_from
from ..policies.selection_run import SelectionRun
from ..policies.selectors import OWN_RATE, SELECTORS, warm_started
from ..policies.semantics import Semantics
from ..simulation.engine import simulate
from ..simulation.settings import SimSettings
from ..simulation.slots import horizon_slots
from . import setups
from .arguments import check_max_jobs, check_positive, check_spec, resolve_market
from .cells import Cell, Done, Table, run
from .outputs import FIGURE, declare
from .published import PAPER_BEST_IMPROVEMENT

__all__ = [
    "ALGORITHMS",
    "BASELINES",
    "MAIN",
    "PAPER_BEST_IMPROVEMENT",
    "SELECTION",
    "Comparison",
    "comparison_table",
    "default_methods",
    "improvement",
    "main_comparison",
    "selection_run",
    "selection_runs",
]

BASELINES = ("on_demand", "greedy", "uniform_progress")
A3 = "A3_select"

SELECTION = declare("06", selection_rounds="csv", selection_summary="json", weights=FIGURE, regret_loglog=FIGURE,
                    member_choices=FIGURE)
MAIN = declare("07", comparison_jobs="csv", setups="csv", comparison_table="csv", utility_by_method=FIGURE,
               improvement=FIGURE)


# ------------------------------------------------------------------------------------------- helpers


def _fingerprint(market: Market) -> dict[str, Any]:
    """Enough of a market to tell two traces apart in a setup key."""
    return {"name": market.name, "slots": len(market), "slot_hours": market.slot_hours,
            "requested": int(market.requested), "avail_sum": int(np.sum(market.avail)),
            "price_sum": round(float(np.nansum(market.spot_price)), 6),
            "od_sum": round(float(np.nansum(market.od_price)), 6)}


# ------------------------------------------------------------------------------ A3 selection (06)


def _round_frame(run: SelectionRun, windows: Sequence[str], market: str) -> pd.DataFrame:
    df = run.to_frame()
    for i, name in enumerate(run.names):
        df[f"utility_{name}"] = run.member_utilities[:, i]
    df["best_member_so_far"] = [run.names[i] for i in np.argmax(np.cumsum(run.member_utilities, axis=0), axis=1)]
    df["bound_hedge"] = regret_bound_hedge(df["round"].to_numpy(), run.n_members, run.lo, run.hi, anytime=True)
    df.insert(0, "algorithm", run.algorithm)
    df.insert(0, "market", market)
    df.insert(2, "window", list(windows))
    return df


def _summary(run: SelectionRun, market: str, slope_start: int | None, extra: Mapping[str, Any]) -> dict[str, Any]:
    regret = run.cumulative_regret(expected=True)
    T = run.rounds
    start = slope_start if slope_start is not None else (10 if T >= 50 else 1)
    try:
        slope = loglog_slope(np.arange(1, T + 1), regret, start=start)
        slope_note = ""
    except PolicyError as exc:  # regret hardly ever positive: nothing to fit
        slope, slope_note = float("nan"), str(exc)
    counts = np.bincount(run.chosen, minlength=run.n_members)
    best = run.best_member
    return {
        "market": market,
        "algorithm": run.algorithm,
        "rounds": T,
        "members": run.n_members,
        "regret": float(regret[-1]),
        "regret_realised": float(run.cumulative_regret(expected=False)[-1]),
        "regret_per_round": float(regret[-1] / T),
        "regret_slope": float(slope),
        "slope_start": int(start),
        "slope_note": slope_note,
        "bound_hedge": float(regret_bound_hedge(T, run.n_members, run.lo, run.hi, anytime=True)),
        "utility_range": [run.lo, run.hi],
        "best_member": run.names[best],
        "best_member_mean_utility": float(run.member_utilities[:, best].mean()),
        "selector_mean_utility": float(run.utility_expected.mean()),
        "selector_mean_utility_realised": float(run.utility_chosen.mean()),
        "most_chosen": run.names[int(np.argmax(counts))],
        "chosen_counts": {n: int(c) for n, c in zip(run.names, counts)},
        "final_weights": {n: float(w) for n, w in zip(run.names, run.probabilities[-1])},
        "seed": int(run.seed),
        **dict(extra),
    }


COLD = "-cold"  # suffix of an algorithm name: the same selector without the warm-up on the trace's past


def _base_algorithm(name: str) -> str:
    base = name.removesuffix(COLD)
    if base not in ALGORITHMS:
        raise PolicyError(f"unknown selection algorithm {name!r}; use one of {', '.join(ALGORITHMS)}, "
                          f"optionally with '{COLD}' (no warm-up)")
    return base


def _rerun(run: SelectionRun, algorithm: str, known: np.ndarray, warm: np.ndarray | None,
           prefer: int | None = None) -> SelectionRun:
    """The selection `select(algorithm=...)` would make on the same replayed utilities (same range, seed,
    warm-up rounds unless the name ends in `-cold`)."""
    base = _base_algorithm(algorithm)
    if base == run.algorithm and not algorithm.endswith(COLD):
        return run
    algo = SELECTORS[base]
    w = None if algorithm.endswith(COLD) else warm
    kw = {"prefer": prefer} if base in OWN_RATE else {}
    out = warm_started(algo, w, run.member_utilities, run.lo, run.hi, known_from=known, seed=run.seed,
                       names=run.names, **kw)
    return replace(out, algorithm=algorithm)


def selection_runs(market: str | Market, spec: setups.JobSpec | None = None, pool: str | Sequence = "default",
                   algorithms: Iterable[str] = ALGORITHMS, stride_hours: float = 2.0, max_jobs: int | None = None,
                   seed: int = 0, n_jobs: int = 1, slot_hours: float = 1.0, hours: float = 24 * 21,
                   market_seed: int = 0, slope_start: int | None = None,
                   skip_hours: float | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A3 on `market` with each algorithm of `algorithms` (pool replayed once): (per-round frame, summary).

    Algorithms: those of `select` (`policies.select.ALGORITHMS`: FlipFlop, its default; AdaHedge; Hedge with the anytime
    worst-case rate; EXP3, the bandit ablation), each started from the warm-up rounds on the trace's past as
    `select` does, or from uniform weights with the suffix `-cold` (e.g. `flipflop-cold`). `bound_hedge` is the anytime Hedge bound, for reference;
    AdaHedge's own bound is within a constant of it.

    The frame has one row per (algorithm, round); the summary one row per algorithm (see `selection_run`).
    `slope_start`: first round of the log-log fit (default 10, or 1 when there are fewer than 50 rounds).
    `skip_hours`: where the first job starts (`market.windows.cut_windows`; default after a week of history).
    """
    algos = [algorithms] if isinstance(algorithms, str) else list(algorithms)
    if not algos:
        raise PolicyError(f"selection_runs: give at least one algorithm ({', '.join(ALGORITHMS)})")
    for a in algos:
        _base_algorithm(a)
    spec = check_spec(spec)
    check_positive(stride_hours, "stride_hours")
    check_max_jobs(max_jobs)
    seed = check_seed(seed, PolicyError)
    key, mkt = resolve_market(market, slot_hours, hours, market_seed)
    job = spec.job(mkt)
    episodes = cut_windows(mkt, stride_hours=stride_hours, horizon_hours=job.hard_deadline_h, max_jobs=max_jobs,
                           skip_hours=skip_hours)
    policy = make_policy("select", {"pool": pool, "algorithm": _base_algorithm(algos[0]), "seed": 0, "n_jobs": n_jobs})
    simulate(policy, episodes, job, SimSettings(), seed)
    base = policy.run_
    extra = {"stride_hours": float(stride_hours), "slot_hours": mkt.slot_hours, "pool": pool if isinstance(pool, str)
             else "custom", "sim_seed": seed, **{f"job_{k}": v for k, v in asdict(spec).items()}}
    frames, rows = [], []
    for a in algos:
        run = _rerun(base, a, known_from(episodes, horizon_slots(job, episodes.slot_hours), policy.settled_),
                     policy.warm_, policy.unwrapped.preferred())
        frames.append(_round_frame(run, episodes.names, key))
        rows.append(_summary(run, key, slope_start, extra))
    return pd.concat(frames, ignore_index=True), pd.DataFrame(rows)


def selection_run(market: str | Market, spec: setups.JobSpec | None = None, pool: str | Sequence = "default",
                  algorithm: str = "flipflop", stride_hours: float = 2.0, max_jobs: int | None = None, seed: int = 0,
                  n_jobs: int = 1, slot_hours: float = 1.0, hours: float = 24 * 21, market_seed: int = 0,
                  slope_start: int | None = None, skip_hours: float | None = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Simulate `select` (pool, AdaHedge, Hedge or EXP3) on jobs one after another on `market`.

    `market`: a key of `market.named.MARKET_SPECS` (loaded at `slot_hours`; synthetic ones `hours` long, seeded with
    `market_seed`) or a `Market`. Jobs start every `stride_hours` (`market.windows.cut_windows`), at most `max_jobs`.
    Returns the per-round frame (columns ``round, chosen, member, utility_chosen, utility_expected, regret,
    regret_realised, eta, weight_<member>..., utility_<member>..., best_member_so_far, bound_hedge``; `regret`
    is the cumulative expected regret against the best fixed member so far) and a summary dict with
    ``rounds, regret, regret_slope, bound_hedge`` (anytime Hedge bound at T), ``best_member`` and more.
    """
    _base_algorithm(algorithm)
    frame, summary = selection_runs(market, spec, pool, [algorithm], stride_hours, max_jobs, seed, n_jobs,
                                    slot_hours, hours, market_seed, slope_start, skip_hours)
    return frame, summary.iloc[0].to_dict()


# ----------------------------------------------------------------------------- main comparison (07)


def default_methods(pool: str | Sequence = "default", predictor: str = "seasonal_naive", w: int = 12, v: int = 1,
                    solver: str = "glpk", n_jobs: int = 1) -> dict[str, tuple[str, dict[str, Any]]]:
    """The methods of the main comparison: label -> (policy, params). A3's label is `A3_select`.

    `n_jobs` goes to the methods that parallelise inside (A3's pool replay, the optimum's windows)."""
    return {
        A3: ("select", {"pool": pool, "n_jobs": n_jobs}),  # select's default algorithm (FlipFlop)
        f"A1_chc_{predictor}": ("chc", {"w": w, "v": v, "predictor": predictor, "solver": solver}),
        "A1_chc_oracle": ("chc", {"w": w, "v": v, "predictor": "oracle", "sigma": 0.0, "solver": solver}),
        "A2_prediction_free": ("prediction_free", {}),
        "on_demand": ("on_demand", {}),
        "greedy": ("greedy", {}),
        "uniform_progress": ("uniform_progress", {}),
        "optimal": ("optimal", {"must_finish": False, "solver": solver, "n_jobs": n_jobs}),
    }


def _role(label: str, policy: str) -> str:
    if label in BASELINES:
        return "baseline"
    if policy == "optimal":
        return "upper bound"
    if label == A3:
        return "ours (A3)"
    return "ours (A1/A2)"


@dataclass
class Comparison:
    """What `main_comparison` returns: per-job rows, the per-(market, method) table, A3's improvement over
    the best baseline per market (empty when A3 or every baseline is missing from the methods), the set-up of each market (`setups.describe`), and which
    (market, method) pairs this call computed (the others came from the CSV)."""

    jobs: pd.DataFrame
    table: pd.DataFrame
    improvement: pd.DataFrame
    setups: pd.DataFrame
    computed: list[tuple[str, str]] = field(default_factory=list)
    csv: Path | None = None


def main_comparison(markets: Iterable[str | Market] | Mapping[str, Market] | str | None = None,
                    spec: setups.JobSpec | None = None,
                    methods: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
                    stride_hours: float | Mapping[str, float] = 3.0, max_jobs: int | None = None, seed: int = 0,
                    out_dir: str | Path | None = None, prefix: str = "07", resume: bool = True,
                    slot_hours: float = 1.0, hours: float = 24 * 21, market_seed: int = 0,
                    progress: bool = False, verbose: bool = False, od_price: float | None = None,
                    spot_share: float | None = None, semantics: Semantics | None = None,
                    skip_hours: float | None = None) -> Comparison:
    """Every method on the same job episodes of every market; incremental and resumable through `out_dir`.

    `markets`: keys of `market.named.MARKET_SPECS` (default: all), paths of one's own traces (`"PATH"` or `"PATH#ZONE"`;
    `od_price` / `spot_share` assume prices where such a trace has none, see `market.load.load_market`), `Market`
    objects, or a mapping label -> Market. `methods`: label -> (policy, params), default `default_methods()`; A3 must be labelled `A3_select` and the
    baselines `on_demand`, `greedy`, `uniform_progress` for `improvement`. `stride_hours`: one value or one
    per market label. With `out_dir`, rows go to `<out_dir>/<prefix>_comparison_jobs.csv` per (market,
    method) as soon as they are computed; with `resume`, pairs whose rows with the same setup key are there
    are read instead of recomputed (`resume=False` recomputes and replaces them). `semantics`: billing and safety
    net of every run (default spotlab's: fractional billing, the strict net without give-up). `skip_hours`: where
    each market's first job starts (`market.windows.cut_windows`; default after a week of history).
    """
    spec = check_spec(spec)
    check_max_jobs(max_jobs)
    seed = check_seed(seed, PolicyError)
    methods = default_methods() if methods is None else methods
    if not isinstance(methods, Mapping) or not methods:
        raise PolicyError("methods must be a non-empty mapping label -> (policy name, params)")
    checked: dict[str, tuple[str, dict[str, Any]]] = {}
    for label, item in methods.items():
        try:
            name, params = item
            params = dict(params or {})
        except (TypeError, ValueError):
            raise PolicyError(f"method {label!r}: expected (policy name, params), got {item!r}") from None
        make_policy(name, params)  # unknown policy or parameter: fail before any simulation
        checked[str(label)] = (name, params)

    if markets is None:
        markets = list(MARKET_SPECS)
    if isinstance(markets, (str, Market)):
        markets = [markets]
    if isinstance(markets, Mapping):
        resolved = {str(k): m for k, m in markets.items()}
        for k, m in resolved.items():
            if not isinstance(m, Market):
                raise TraceError(f"markets[{k!r}] must be a Market, got {type(m).__name__}")
    else:
        resolved = dict(resolve_market(m, slot_hours, hours, market_seed, od_price, spot_share) for m in markets)
    if not resolved:
        raise TraceError("main_comparison: no markets given")
    strides = {k: (stride_hours.get(k) if isinstance(stride_hours, Mapping) else stride_hours) for k in resolved}
    for k, s in strides.items():
        check_positive(s, f"stride_hours[{k!r}]")

    csv = None if out_dir is None else Path(out_dir) / replace(MAIN.comparison_jobs, notebook=prefix).csv
    setup_rows, cells, computed = [], [], []
    for key, mkt in resolved.items():
        job = spec.job(mkt)
        episodes = cut_windows(mkt, stride_hours=strides[key], horizon_hours=job.hard_deadline_h, max_jobs=max_jobs,
                               skip_hours=skip_hours)
        setup_rows.append({"market": key, "title": MARKET_SPECS[key].title if key in MARKET_SPECS else key,
                           "stride_hours": strides[key], "seed": seed, **setups.describe(job, mkt, episodes)})
        base = {"market": _fingerprint(mkt), "spec": asdict(spec), "stride": strides[key], "max_jobs": max_jobs,
                "seed": seed, "jobs": episodes.n}
        if semantics is not None and semantics != Semantics():  # the default's keys stay those of earlier runs
            base["semantics"] = semantics.key()
        if skip_hours is not None:
            base["skip_hours"] = float(skip_hours)
        for label, (name, params) in checked.items():
            cells.append(Cell("main comparison", {**base, "method": label, "policy": name, "params": params,
                                                  "resolved": resolved_params(name, params)},
                              {"market": key, "method": label}, seed, (episodes, job), key_length=12))

    def compute(cell: Cell) -> pd.DataFrame:
        episodes, job = cell.inputs
        key, label = cell.labels["market"], cell.labels["method"]
        name, params = cell.params["policy"], cell.params["params"]
        rows = setups.run_methods({label: (name, params)}, episodes, job, semantics, seed=seed, progress=progress)
        rows.insert(0, "market", key)
        rows["role"] = _role(label, name)
        rows["params"] = json.dumps(params, sort_keys=True, default=str)
        rows["setup_key"] = cell.key
        return rows

    def done(cell: Cell, d: Done) -> None:
        if not d.computed:
            return
        key, label = cell.labels["market"], cell.labels["method"]
        computed.append((key, label))
        if verbose:
            print(f"{key:12s} {label:24s} mean utility {d.rows['utility'].mean():10.2f} ({len(d.rows)} jobs)")

    # a pair computed again (another set-up, or rows cut short) replaces its earlier rows in the file
    table = None if csv is None else Table(csv, key="setup_key", rows=lambda c: c.inputs[0].n,
                                           supersede=("market", "method"))
    parts = run(cells, compute, table, resume=resume, on_done=done)
    jobs = pd.concat(parts, ignore_index=True)
    for col in ("met_deadline", "met_hard_deadline"):
        jobs[col] = jobs[col].astype(bool)
    table = comparison_table(jobs)
    has = set(jobs["method"])
    imp = improvement(jobs) if A3 in has and has & set(BASELINES) else pd.DataFrame()
    return Comparison(jobs, table, imp, pd.DataFrame(setup_rows), computed, csv)


def _ci95(x: pd.Series) -> float:
    n = int(x.count())
    if n < 2:
        return float("nan")
    from scipy import stats

    return float(stats.t.ppf(0.975, n - 1) * x.std(ddof=1) / math.sqrt(n))


def comparison_table(jobs: pd.DataFrame) -> pd.DataFrame:
    """Per (market, method): jobs, mean utility with its 95% CI (t, over jobs), mean cost, mean completion time
    of the finished jobs, soft and hard deadline hit rates, mean reconfigurations, and utility relative to
    the optimum of that market (when `optimal` is among the methods)."""
    need = {"market", "method", "utility", "cost", "completion_h", "met_deadline", "met_hard_deadline"}
    missing = need - set(jobs.columns)
    if missing:
        raise TraceError(f"comparison_table: the job rows lack columns {sorted(missing)}")
    g = jobs.groupby(["market", "method"], sort=False)
    table = g.agg(jobs=("utility", "size"), mean_utility=("utility", "mean"), std_utility=("utility", "std"),
                  mean_cost=("cost", "mean"), mean_completion_h=("completion_h", "mean"),
                  deadline_hit_rate=("met_deadline", "mean"), hard_deadline_hit_rate=("met_hard_deadline", "mean"))
    table["ci95_utility"] = g["utility"].apply(_ci95)
    if "reconfigurations" in jobs.columns:
        table["mean_reconfigurations"] = g["reconfigurations"].mean()
    if "fallback_rate" in jobs.columns:  # rows written before the column existed read as NaN, not 0
        table["fallback_rate"] = g["fallback_rate"].mean()
    if "role" in jobs.columns:
        table["role"] = g["role"].first()
    table = table.reset_index()
    opt = table[table["method"] == "optimal"].set_index("market")["mean_utility"]
    table["share_of_optimum"] = table["mean_utility"] / table["market"].map(opt).abs()
    return table


def improvement(jobs: pd.DataFrame, method: str = A3, baselines: Sequence[str] = BASELINES) -> pd.DataFrame:
    """A3 (`method`) against the best baseline of each market, from per-job rows (see the module docstring).

    One row per market: the best baseline and its mean utility, `method`'s mean utility, `mean_improvement`
    (relative to |mean utility of the best baseline|), `best_improvement` (largest per-job gain over the
    same reference, jobs matched by their index), the share of jobs where `method` beats the best baseline;
    plus an `all` row whose improvements are the largest over the markets (the paper's "up to").
    """
    need = {"market", "method", "job", "utility"}
    missing = need - set(jobs.columns)
    if missing:
        raise TraceError(f"improvement: the job rows lack columns {sorted(missing)}")
    rows = []
    for market, sub in jobs.groupby("market", sort=False):
        means = sub.groupby("method")["utility"].mean()
        if method not in means.index:
            raise TraceError(f"improvement: market {market!r} has no rows of {method!r}")
        present = [b for b in baselines if b in means.index]
        if not present:
            raise TraceError(f"improvement: market {market!r} has none of the baselines {list(baselines)}")
        best = max(present, key=lambda b: means[b])
        ref = float(means[best])
        ours = sub[sub["method"] == method].set_index("job")["utility"]
        theirs = sub[sub["method"] == best].set_index("job")["utility"]
        common = ours.index.intersection(theirs.index)
        diff = ours.loc[common] - theirs.loc[common]
        scale = abs(ref)
        ok = scale > 1e-9
        rows.append({
            "market": market, "method": method, "best_baseline": best, "best_baseline_utility": ref,
            "method_utility": float(means[method]), "jobs": int(len(common)),
            "mean_improvement": float((means[method] - ref) / scale) if ok else float("nan"),
            "best_improvement": float(diff.max() / scale) if ok and len(diff) else float("nan"),
            "share_jobs_better": float((diff > 1e-9).mean()) if len(diff) else float("nan"),
            "note": "" if ok else "best baseline utility is 0: relative improvement undefined",
        })
    out = pd.DataFrame(rows)
    if len(out):
        i = out["mean_improvement"].idxmax() if out["mean_improvement"].notna().any() else None
        out = pd.concat([out, pd.DataFrame([{
            "market": "all", "method": method, "best_baseline": "",
            "jobs": int(out["jobs"].sum()),
            "mean_improvement": out["mean_improvement"].max(), "best_improvement": out["best_improvement"].max(),
            "share_jobs_better": float(np.average(out["share_jobs_better"], weights=out["jobs"]))
            if out["jobs"].sum() else float("nan"),
            "note": "largest over markets" + (f"; largest mean improvement on {out.loc[i, 'market']}"
                                              if i is not None else ""),
        }])], ignore_index=True)
    return out
