"""Prediction horizon experiments: motivation, error sensitivity and commitment level (SPEC §7 items 3-5).

All three replay online policies on the jobs of `market.windows.cut_windows` through `setups.run_methods` (the
simulator is the single source of truth) and return **tidy per-job tables**: one row per (market, forecast
error sigma, method, job) with the utility, cost, deadline flags, the policy and its parameters, the
simulation seed and the set-up (`setups.describe`, columns `setup_*`). `summarize` turns them into means
with 95% confidence intervals over jobs.

- `motivation`: A1 (CHC fed by the controlled-error oracle; accurate sigma = 0 and inaccurate sigma > 0)
  vs A2 (prediction-free, default parameters) vs Uniform Progress and the hindsight optimum [paper: "with
  accurate predictions A1 is cheaper than A2; with inaccurate ones it can be worse"].
- `error_sensitivity`: utility vs sigma for A1 at several (w, v), A2 (flat: it reads no forecast) and A3
  (`select`, Hedge over a pool of those A1 variants at the same sigma plus A2 variants).
- `commitment_grid`: A1's utility over (w, v), v <= w, per sigma.

Forecast error. `sigma` is the error of the controlled-error oracle (`predict.oracle`): the forecast of slot
t+h is truth x (1 + N(0, sigma^2 h)), for availability and price alike. It is *not* A2's `sigma` parameter
(the fraction of the soft deadline its progress line aims at). The oracle's noise is seeded by the
simulation seed and the window, so every sigma sees the same standard-normal draws scaled differently
(common random numbers: the curves vs sigma are smooth and their differences are not seed noise).

Methods that read no forecast (A2, Uniform Progress, the optimum) are run once per market and stored with
sigma = NaN; `error_sensitivity` repeats them at every sigma in the table it returns (`forecast=False`).

Resume. With `out_csv`, each (market, sigma, method) cell is appended to the CSV as soon as its jobs are
done, and a later call reuses every cell already there with the same configuration (a hash of the policy,
its parameters, the seed, the set-up and the job windows: column `config`), so an interrupted run resumes
and a changed parameter is recomputed, never mixed with stale rows. Cells run in parallel (`n_jobs`
joblib workers, one cell per task); `cells.run` does the bookkeeping. The files notebooks 03-05 write are
`MOTIVATION`, `SENSITIVITY` and `COMMITMENT`.

The optimum is `optimal` with `must_finish=False` re-simulated in the simulator. Its MILP bills every slot
in full (`optimum.model`), so when an online policy finishes inside a slot and is billed a fraction of it,
the "optimum" can end a little (well under 1% of the value) below that policy: it is an upper bound up to
that rounding.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ExperimentError
from ..jobs.job import Job
from ..market.episodes import Episodes
from ..market.load import load_market
from ..market.market import Market
from ..market.named import MARKET_SPECS
from ..market.windows import cut_windows
from ..policies.registry import resolved_params
from ..policies.select import ALGORITHMS, member_label
from . import setups as su
from .cells import Cell, Done, Table, json_default
from .cells import run as run_all
from .outputs import FIGURE, declare

MOTIVATION = declare("03", motivation_jobs="csv", setup="json", utility_by_method=FIGURE, paired_vs_a2=FIGURE,
                     key_numbers="csv")
SENSITIVITY = declare("04", error_sensitivity_jobs="csv", setup="json", utility_vs_sigma=FIGURE,
                      paired_vs_a2="csv", utility_table="csv")
COMMITMENT = declare("05", commitment_jobs="csv", setup="json", utility_heatmap=FIGURE, best_cells="csv")

RESULT_COLUMNS = ["window", "cost", "value", "utility", "completion_h", "met_deadline", "met_hard_deadline",
                  "reconfigurations", "preemptions", "spot_gpu_hours", "od_gpu_hours", "overhead_h"]
SETUP_KEYS = ["market", "slot_hours", "jobs", "work", "deadline_h", "hard_deadline_h", "n_min", "n_max", "alpha",
              "beta", "overhead_h", "value", "miss_penalty", "hours_at_n_max", "od_cost", "market_key",
              "market_seed", "stride_hours"]
COLUMNS = (["experiment", "market", "sigma", "method", "family", "forecast", "w", "v", "policy", "params", "job"]
           + RESULT_COLUMNS + ["seed", "config"] + [f"setup_{k}" for k in SETUP_KEYS])

DEFAULT_A2_POOL: tuple[dict[str, float], ...] = (
    {"theta": 0.4, "sigma": 0.8},
    {"theta": 0.6, "sigma": 0.8},
    {"theta": 0.8, "sigma": 0.9},
)


# ------------------------------------------------------------------------------------------ set-up


@dataclass(frozen=True)
class Setup:
    """One market with its job and episodes, and the description a caption needs."""

    label: str
    market: Market
    job: Job
    episodes: Episodes
    describe: dict[str, Any]


def prepare(market: str | Market, spec: su.JobSpec | None = None, slot_hours: float = 1.0,
            hours: float = 24 * 21, market_seed: int = 0, stride_hours: float = 6.0, max_jobs: int | None = None,
            history_hours: float = 168.0, skip_hours: float | None = None) -> Setup:
    """The set-up of one market: a `market.named.MARKET_SPECS` key (synthetic ones `hours` long, seeded by
    `market_seed`) or a `Market`, the job `spec` sized to it and its jobs one after another (the first after
    `skip_hours`, default the history: `market.windows.cut_windows`)."""
    spec = spec or su.JobSpec()
    if isinstance(market, Market):
        label, m = market.name, market
    elif isinstance(market, str):
        label, m = market, load_market(market, slot_hours=slot_hours, hours=hours, seed=market_seed)
    else:
        raise ExperimentError(f"a market is a named market ({', '.join(MARKET_SPECS)}) or a Market (got {market!r})")
    if max_jobs is not None and (isinstance(max_jobs, bool) or int(max_jobs) != max_jobs or max_jobs < 1):
        raise ExperimentError(f"max_jobs must be a whole number >= 1 or None (got {max_jobs!r})")
    job = spec.job(m)
    ep = cut_windows(m, stride_hours=stride_hours, horizon_hours=job.hard_deadline_h, max_jobs=max_jobs,
                     history_hours=history_hours, skip_hours=skip_hours)
    desc = su.describe(job, m, ep)
    synthetic = isinstance(market, str) and MARKET_SPECS[market].relpath is None
    desc.update(market_key=label, market_seed=market_seed if synthetic else np.nan, stride_hours=stride_hours)
    return Setup(label, m, job, ep, desc)


def _setups(markets: str | Market | Iterable, spec, kw: dict) -> list[Setup]:
    if isinstance(markets, (str, Market, Setup)):
        markets = [markets]
    out = [m if isinstance(m, Setup) else prepare(m, spec, **kw) for m in markets]
    if not out:
        raise ExperimentError("no markets given")
    labels = [s.label for s in out]
    if len(set(labels)) != len(labels):
        raise ExperimentError(f"market labels must be distinct (got {labels})")
    return out


# ------------------------------------------------------------------------------------ validation


def _sigmas(sigmas, name: str = "sigmas") -> list[float]:
    if isinstance(sigmas, (int, float)) and not isinstance(sigmas, bool):
        sigmas = [sigmas]
    try:
        vals = [float(s) for s in sigmas]
    except (TypeError, ValueError):
        raise ExperimentError(f"{name} must be numbers >= 0 (got {sigmas!r})") from None
    if not vals:
        raise ExperimentError(f"{name}: give at least one forecast error sigma")
    bad = [s for s in vals if not (math.isfinite(s) and s >= 0)]
    if bad:
        raise ExperimentError(f"{name}: a forecast error sigma must be a finite number >= 0 (got {bad[0]!r})")
    return list(dict.fromkeys(vals))


def _whole(x, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ExperimentError(f"{name} must be a whole number >= 1 (got {x!r})")
    return int(x)


def _variants(chc_variants) -> list[tuple[int, int]]:
    out = []
    for item in chc_variants:
        try:
            w, v = item
        except (TypeError, ValueError):
            raise ExperimentError(f"chc_variants are (w, v) pairs (got {item!r})") from None
        w, v = _whole(w, "w"), _whole(v, "v")
        if v > w:
            raise ExperimentError(f"the commitment level v={v} cannot exceed the window w={w}")
        out.append((w, v))
    if not out:
        raise ExperimentError("chc_variants: give at least one (w, v) pair")
    return list(dict.fromkeys(out))


# ---------------------------------------------------------------------------------------- methods


@dataclass(frozen=True)
class Method:
    label: str
    family: str  # A1, A2, A3, baseline, optimum
    policy: str
    params: dict[str, Any]
    sigma: float = float("nan")  # NaN: reads no forecast
    w: int | None = None
    v: int | None = None

    @property
    def forecast(self) -> bool:
        return not math.isnan(self.sigma)


def chc_params(w: int, v: int, sigma: float, solver: str = "glpk", extra: Mapping[str, Any] | None = None) -> dict:
    """A1 on the controlled-error oracle with forecast error `sigma`."""
    return {"w": int(w), "v": int(v), "predictor": "oracle", "sigma": float(sigma), "solver": solver, **(extra or {})}


def select_pool(variants: Sequence[tuple[int, int]], sigma: float, a2_pool: Iterable[Mapping[str, Any]],
                solver: str = "glpk", chc_extra: Mapping[str, Any] | None = None) -> list[tuple[str, dict]]:
    """A3's pool at forecast error `sigma`: the A1 variants on the oracle at that sigma, then the A2 variants."""
    pool = [("chc", chc_params(w, v, sigma, solver, chc_extra)) for w, v in variants]
    return pool + [("prediction_free", dict(p)) for p in a2_pool]


def _a1_label(w: int, v: int) -> str:
    return f"A1 w={w} v={v}"


def _optimum(solver: str, time_limit: float) -> Method:
    return Method("optimum", "optimum", "optimal",
                  {"must_finish": False, "solver": solver, "time_limit": float(time_limit), "n_jobs": 1})


# ------------------------------------------------------------------------------------------ running


def _config(method: Method, setup: Setup, seed: int) -> dict[str, Any]:
    """What a cell's rows depend on; its hash is the `config` column."""
    return {"policy": method.policy, "params": method.params, "seed": int(seed), "setup": setup.describe,
            "windows": list(setup.episodes.names), "resolved": resolved_params(method.policy, method.params)}


def _rows(df: pd.DataFrame, experiment: str, setup: Setup, method: Method, seed: int, config: str) -> pd.DataFrame:
    out = pd.DataFrame({
        "experiment": experiment, "market": setup.label, "sigma": method.sigma, "method": method.label,
        "family": method.family, "forecast": method.forecast,
        "w": np.nan if method.w is None else method.w, "v": np.nan if method.v is None else method.v,
        "policy": method.policy, "params": json.dumps(method.params, sort_keys=True, default=json_default),
        "job": df["job"].to_numpy(),
    })
    for c in RESULT_COLUMNS:
        out[c] = df[c].to_numpy()
    out["seed"] = int(seed)
    out["config"] = config
    for k in SETUP_KEYS:
        out[f"setup_{k}"] = setup.describe.get(k, np.nan)
    return out[COLUMNS]


def _one_cell(cell: Cell) -> pd.DataFrame:
    setup, method, *known = cell.inputs
    if known:  # A3 over members already simulated as cells of their own
        return _rows(_select_from_members(setup, method, known[0], cell.seed), cell.experiment, setup, method,
                     cell.seed, cell.key)
    df = su.run_methods({method.label: (method.policy, dict(method.params))}, setup.episodes, setup.job,
                        seed=cell.seed, n_jobs=1, progress=False)
    return _rows(df, cell.experiment, setup, method, cell.seed, cell.key)


def _select_from_members(setup: Setup, method: Method, known: Mapping[str, pd.DataFrame], seed: int) -> pd.DataFrame:
    """A3 (`select`) on a set-up, its members' outcomes read from the rows of `known` (member label -> rows of
    that member's cell) where there are some, the others simulated here: the selector's choice per round from
    the members' utilities (`Select.choose`, warm-up replays included), and each round's outcome that of its
    chosen member, which is what replaying the member's actions under the same safety net gives (a test
    compares the two)."""
    from ..policies.registry import make_policy
    from ..policies.select import settled_slots
    from ..policies.select_from_members import warmup_utilities
    from ..policies.semantics import Semantics
    from ..simulation.slots import horizon_slots

    sem = Semantics()  # the net `run_methods` simulates every cell under
    sel = make_policy(method.policy, dict(method.params)).unwrapped
    members = sel.members()
    ep, job = setup.episodes, setup.job
    horizon = horizon_slots(job, ep.slot_hours)
    frames = []
    for name, params in members:
        rows = known.get(member_label(name, params))
        if rows is None:
            rows = su.run_methods({"member": (name, params)}, ep, job, sem, seed=seed, n_jobs=1, progress=False)
        frames.append(rows.sort_values("job").reset_index(drop=True))
    U = np.stack([f["utility"].to_numpy(dtype=float) for f in frames], axis=1)
    warm, = warmup_utilities(sel, [ep], job, sem.settings, seed, sem.safety_net, sem.give_up)
    settled = np.stack([settled_slots(f["completion_h"].to_numpy(dtype=float), ep.slot_hours, horizon)
                        for f in frames], axis=1)
    chosen = sel.choose(U, warm, ep, job, horizon, seed, settled).chosen
    out = pd.DataFrame({c: [frames[k][c].iloc[r] for r, k in enumerate(chosen)] for c in RESULT_COLUMNS})
    out.insert(0, "job", np.arange(ep.n))
    return out


def run_cells(experiment: str, cells: Sequence[tuple], seed: int = 0, n_jobs: int = 1,
              out_csv: str | Path | None = None, verbose: bool = False) -> pd.DataFrame:
    """Simulate every (set-up, method) cell not already in `out_csv`; append each as it finishes.

    A cell (set-up, method, known) is A3 over members whose rows `known` maps by member label (see
    `_select_from_members`). Returns the per-job rows of all cells (reused and new), in the order of `cells`."""
    return _types(pd.concat(_cell_parts(experiment, cells, seed, n_jobs, out_csv, verbose), ignore_index=True))


def _cell_parts(experiment: str, cells: Sequence[tuple], seed: int, n_jobs: int, out_csv: str | Path | None,
                verbose: bool) -> list[pd.DataFrame]:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ExperimentError(f"seed must be a whole number >= 0 (got {seed!r})")
    todo = [Cell(experiment, _config(c[1], c[0], seed), {"experiment": experiment, "market": c[0].label,
                                                         "method": c[1].label}, int(seed), tuple(c)) for c in cells]
    table = None if out_csv is None else Table(
        Path(out_csv), tuple(COLUMNS), key="config", rows=lambda c: c.inputs[0].episodes.n, unique=("job",),
        required=("config", "job", "experiment"), owner="spotlab.experiments.horizon")

    def report(cell: Cell, done: Done) -> None:
        if not verbose:
            return
        s, m = cell.inputs[:2]
        if done.computed:
            print(f"{experiment}: {s.label} / {m.label}: mean utility {done.rows['utility'].mean():.2f} $ "
                  f"over {len(done.rows)} jobs")
        else:
            print(f"{experiment}: {s.label} / {m.label}: reused from {out_csv}")

    return run_all(todo, _one_cell, table, n_jobs=n_jobs, on_done=report)


def _types(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for c in ("met_deadline", "met_hard_deadline", "forecast"):
        df[c] = df[c].astype(str).str.lower().isin(("true", "1", "1.0"))
    for c in ("sigma", "w", "v", "utility", "cost", "value", "completion_h"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    df["job"] = df["job"].astype(int)
    df["seed"] = df["seed"].astype(int)
    df["config"] = df["config"].astype(str)
    return df


# ------------------------------------------------------------------------------------- experiments


def motivation(markets: str | Market | Iterable = ("calm", "volatile"), spec: su.JobSpec | None = None,
               sigmas: Sequence[float] = (0.0, 0.5), w: int = 6, v: int = 2, include_optimum: bool = True,
               include_uniform: bool = True, solver: str = "glpk", opt_time_limit: float = 120.0,
               chc_extra: Mapping[str, Any] | None = None, seed: int = 0, n_jobs: int = 1,
               out_csv: str | Path | None = None, verbose: bool = False, **setup_kw) -> pd.DataFrame:
    """Per-job utility of A1 (CHC w, v on the oracle at each sigma), A2 (default), Uniform Progress and the
    optimum on each market (SPEC §7.3). `setup_kw` go to `prepare` (slot_hours, hours, market_seed,
    stride_hours, max_jobs, history_hours)."""
    sig = _sigmas(sigmas)
    w, v = _variants([(w, v)])[0]
    cells = []
    for s in _setups(markets, spec, setup_kw):
        if include_optimum:
            cells.append((s, _optimum(solver, opt_time_limit)))
        for x in sig:
            cells.append((s, Method(f"A1 σ={x:g}", "A1", "chc", chc_params(w, v, x, solver, chc_extra), x, w, v)))
        cells.append((s, Method("A2", "A2", "prediction_free", {})))
        if include_uniform:
            cells.append((s, Method("uniform_progress", "baseline", "uniform_progress", {})))
    return run_cells("motivation", cells, seed, n_jobs, out_csv, verbose)


def error_sensitivity(market: str | Market, spec: su.JobSpec | None = None,
                      sigmas: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.5),
                      chc_variants: Sequence[tuple[int, int]] = ((6, 1), (6, 3), (6, 6)),
                      include_select: bool = True, a2_pool: Iterable[Mapping[str, Any]] = DEFAULT_A2_POOL,
                      algorithm: str = "flipflop", include_optimum: bool = False, solver: str = "glpk",
                      opt_time_limit: float = 120.0, chc_extra: Mapping[str, Any] | None = None, seed: int = 0,
                      n_jobs: int = 1, out_csv: str | Path | None = None, verbose: bool = False,
                      reuse_members: bool = True, **setup_kw) -> pd.DataFrame:
    """Per-job utility vs forecast error sigma on one market (SPEC §7.4): A1 per (w, v), A2 (default
    parameters; repeated at every sigma, `forecast=False`) and A3 = `select` over the pool of those A1
    variants at that sigma plus the `a2_pool` variants (`select_pool`). `reuse_members`: A3's A1 members are
    read from the A1 cells' rows (the same numbers, a third less time) instead of replayed."""
    sig = _sigmas(sigmas)
    variants = _variants(chc_variants)
    a2 = [dict(p) for p in a2_pool]
    if include_select and algorithm not in ALGORITHMS:
        raise ExperimentError(f"algorithm must be one of {', '.join(ALGORITHMS)} (got {algorithm!r})")
    if isinstance(market, (list, tuple)):
        raise ExperimentError("error_sensitivity runs on one market; call it once per market")
    (s,) = _setups(market, spec, setup_kw)
    cells = [(s, Method("A2", "A2", "prediction_free", {}))]
    if include_optimum:
        cells.append((s, _optimum(solver, opt_time_limit)))
    a3 = []
    for x in sig:
        for w, v in variants:
            cells.append((s, Method(_a1_label(w, v), "A1", "chc", chc_params(w, v, x, solver, chc_extra), x, w, v)))
        if include_select:
            pool = select_pool(variants, x, a2, solver, chc_extra)
            a3.append((s, Method("A3 select", "A3", "select", {"pool": pool, "algorithm": algorithm, "n_jobs": 1}, x)))
    if not reuse_members:
        return broadcast_sigma(run_cells("error_sensitivity", cells + a3, seed, n_jobs, out_csv, verbose), sig)
    # the A1 lines first; A3 then reads its A1 members' outcomes from their rows instead of replaying them
    parts = _cell_parts("error_sensitivity", cells, seed, n_jobs, out_csv, verbose)
    known = {member_label(m.policy, m.params): rows for (_, m), rows in zip(cells, parts) if m.family == "A1"}
    parts += _cell_parts("error_sensitivity", [(st, m, known) for st, m in a3], seed, n_jobs, out_csv, verbose)
    return broadcast_sigma(_types(pd.concat(parts, ignore_index=True)), sig)


def commitment_grid(market: str | Market, spec: su.JobSpec | None = None, ws: Sequence[int] = (2, 4, 6, 8, 12),
                    vs: Sequence[int] | None = None, sigmas: float | Sequence[float] = 0.0,
                    include_a2: bool = True, solver: str = "glpk", chc_extra: Mapping[str, Any] | None = None,
                    seed: int = 0, n_jobs: int = 1, out_csv: str | Path | None = None, verbose: bool = False,
                    **setup_kw) -> pd.DataFrame:
    """Per-job utility of A1 over the grid of (w, v) with v <= w (`vs` default: the values of `ws`), at each
    sigma (SPEC §7.5); A2 as the prediction-free reference (repeated at every sigma)."""
    sig = _sigmas(sigmas)
    ws_ = sorted({_whole(w, "w") for w in ws})
    vs_ = sorted({_whole(v, "v") for v in (ws if vs is None else vs)})
    pairs = [(w, v) for w in ws_ for v in vs_ if v <= w]
    if not pairs:
        raise ExperimentError(f"no (w, v) pair with v <= w in ws={list(ws)}, vs={list(vs or [])}")
    if isinstance(market, (list, tuple)):
        raise ExperimentError("commitment_grid runs on one market; call it once per market")
    (s,) = _setups(market, spec, setup_kw)
    cells = [(s, Method("A2", "A2", "prediction_free", {}))] if include_a2 else []
    for x in sig:
        for w, v in pairs:
            cells.append((s, Method(_a1_label(w, v), "A1", "chc", chc_params(w, v, x, solver, chc_extra), x, w, v)))
    df = run_cells("commitment", cells, seed, n_jobs, out_csv, verbose)
    return broadcast_sigma(df, sig)


# ----------------------------------------------------------------------------------------- tables


def broadcast_sigma(df: pd.DataFrame, sigmas: Sequence[float]) -> pd.DataFrame:
    """Repeat the rows of methods that read no forecast (sigma NaN) at every sigma, for per-sigma plots."""
    free = df[df["sigma"].isna()]
    if free.empty:
        return df.reset_index(drop=True)
    rep = pd.concat([free.assign(sigma=float(x)) for x in sigmas], ignore_index=True)
    return pd.concat([df[df["sigma"].notna()], rep], ignore_index=True)


def summarize(df: pd.DataFrame, by: Sequence[str] = ("market", "sigma", "method"), level: float = 0.95) -> pd.DataFrame:
    """Mean, std and a t-based `level` confidence interval over jobs of utility and cost per group, with the
    deadline hit rates. `ci_lo`/`ci_hi` bound the mean utility; `cost_ci` is the cost's half-width."""
    from scipy import stats

    if df.empty:
        raise ExperimentError("nothing to summarise: the table is empty")
    keys = [k for k in by if k in df.columns]
    g = df.groupby(keys, sort=False, dropna=False)
    out = g.agg(utility=("utility", "mean"), utility_std=("utility", "std"), n=("utility", "size"),
                cost=("cost", "mean"), cost_std=("cost", "std"), value=("value", "mean"),
                deadline_met=("met_deadline", "mean"), hard_deadline_met=("met_hard_deadline", "mean"),
                completion_h=("completion_h", "mean"), family=("family", "first"), w=("w", "first"),
                v=("v", "first"), seed=("seed", "first")).reset_index()
    tq = np.where(out["n"] > 1, stats.t.ppf(0.5 + level / 2, np.maximum(out["n"] - 1, 1)), np.nan)
    half = tq * out["utility_std"].fillna(0) / np.sqrt(out["n"])
    out["ci_lo"] = out["utility"] - half
    out["ci_hi"] = out["utility"] + half
    out["cost_ci"] = tq * out["cost_std"].fillna(0) / np.sqrt(out["n"])
    if "fallback_rate" in df.columns:
        out["fallback_rate"] = g["fallback_rate"].mean().to_numpy()
    return out


def paired(df: pd.DataFrame, reference: str = "A2", by: Sequence[str] = ("market", "sigma", "method"),
           level: float = 0.95) -> pd.DataFrame:
    """Per-job differences to the `reference` method on the same job (same market, same trace window):
    mean utility and cost difference, the `level` t-interval of the utility difference and the share of
    jobs where the method does at least as well. Pairing removes the job-to-job spread that dominates the
    per-method intervals of `summarize`. The reference is matched on sigma too when it has one."""
    from scipy import stats

    ref = df[df["method"] == reference]
    if ref.empty:
        raise ExperimentError(f"no rows of the reference method {reference!r}; methods: "
                              f"{', '.join(map(str, df['method'].unique()))}")
    keys = ["market", "job"] + (["sigma"] if ref["sigma"].notna().all() and "sigma" in by else [])
    ref = ref.drop_duplicates(keys)[keys + ["utility", "cost"]].rename(columns={"utility": "ref_utility",
                                                                                 "cost": "ref_cost"})
    m = df[df["method"] != reference].merge(ref, on=keys, how="inner")
    m["d_utility"] = m["utility"] - m["ref_utility"]
    m["d_cost"] = m["cost"] - m["ref_cost"]
    m["not_worse"] = m["d_utility"] >= -1e-9
    g = m.groupby([k for k in by if k in m.columns], sort=False, dropna=False)
    out = g.agg(d_utility=("d_utility", "mean"), d_std=("d_utility", "std"), d_cost=("d_cost", "mean"),
                not_worse=("not_worse", "mean"), n=("d_utility", "size")).reset_index()
    tq = np.where(out["n"] > 1, stats.t.ppf(0.5 + level / 2, np.maximum(out["n"] - 1, 1)), np.nan)
    half = tq * out["d_std"].fillna(0) / np.sqrt(out["n"])
    out["d_lo"], out["d_hi"] = out["d_utility"] - half, out["d_utility"] + half
    out.insert(0, "reference", reference)
    return out


def setup_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per market: the set-up its jobs ran on (what a caption says) and the seeds."""
    cols = [c for c in df.columns if c.startswith("setup_")]
    t = df.groupby("market", sort=False).agg({**{c: "first" for c in cols}, "seed": "unique"}).reset_index()
    t["seed"] = t["seed"].map(lambda s: ",".join(str(int(x)) for x in s))
    return t.rename(columns={c: c.removeprefix("setup_") for c in cols} | {"market": "label"})


__all__ = ["COLUMNS", "COMMITMENT", "DEFAULT_A2_POOL", "ExperimentError", "MOTIVATION", "Method", "SENSITIVITY",
           "Setup", "broadcast_sigma", "chc_params",
           "commitment_grid", "error_sensitivity", "motivation", "paired", "prepare", "run_cells", "select_pool",
           "setup_table", "summarize"]
