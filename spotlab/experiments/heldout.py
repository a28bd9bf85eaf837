"""Held-out check: do the online policies' defaults keep their bars on jobs and markets nobody tuned them for?

Why this exists: A1's window problem, A2's constants and A3's pool and evidence level were chosen on the
notebooks' markets and a few zones. A user's trace and job are neither. `heldout_check` draws job shapes
from a wide space (`random_spec`: 1-8 GPUs, any N_min, beta < 0 and > 0, loose and tight deadlines, jobs
worth less than finishing them on demand, cost-only jobs), runs every method on the same job episodes of
each market through `main_comparison` (one simulator, resumable CSV), and says per (market, job) whether
each bar holds:

- ``a1_full``: CHC with perfect forecasts and a window over the whole job is within ``full_rel`` (1%) of
  the optimum's mean utility. ``net_binds`` is the share of jobs whose optimal schedule the strict safety
  net would override (`optimal_netted`): there the slack is tighter than the net allows, and no guarded
  online policy can follow the hindsight plan, whatever its forecasts; a failed bar with ``net_binds`` > 0
  may be the net's insurance, not the plan.
- ``a1_w``: CHC with perfect forecasts and a window of ``w`` slots (12) is within ``window_rel`` (10%) of
  the optimum's mean utility and not below uniform progress. Perfect forecasts cover the slots after the window
  too (the oracle's tail, `chc`'s ``tail="auto"``); with the past's tail (``tail="past"``) this measures what
  the past week tells a plan about the rest of a job.
- ``a2``: prediction-free with its defaults is not below uniform progress.
- ``a3``: policy selection with its defaults is not below the better of uniform progress and greedy;
  greedy counts only where it meets the soft deadline at least as often as A3 does.

Each bar also has its margin (`MARGINS`), so that a failed bar says by how much: ``a1_full_gap`` and ``a1_w_gap``
(the utility's gap to the optimum, relative to its size), ``a2_margin`` and ``a3_margin`` ($/job above uniform
progress, and above the better baseline as counted for ``a3``); `HeldOut.summary` gives their mean and worst.

"Within x% of the optimum" means ``U >= U_opt - x |U_opt|`` on the mean utility per job; every comparison
allows ``tie`` $/job of rounding. The optimum is the hindsight plan: ``must_finish=False`` (the upper bound)
for a job with a value or a miss penalty; a cost-only job (value and penalty 0) must finish, otherwise doing
nothing would be its optimum. A cost-only job's utility is minus its cost, so the same bars read on cost.
Like with like: where the optimum may leave a job unfinished, the online methods' safety net may too (its
give-up: it stops a job whose finishing on demand costs more than its value and penalty); without it, the net
drives such a job to the end on on-demand GPUs and no guarded policy can reach the optimum's utility.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import JobError, PolicyError, TraceError
from ..market.market import Market
from ..market.named import MARKET_SPECS
from ..policies.semantics import Semantics
from ..simulation.slots import horizon_slots
from . import setups
from .arguments import check_max_jobs, check_positive, resolve_market
from .comparison import A3, main_comparison
from ..params import check_seed

__all__ = ["BARS", "MARGINS", "MARGIN_UNITS", "HeldOut", "bars", "heldout_check", "random_spec"]

BARS = ("a1_full", "a1_w", "a2", "a3")
PREFIX = "heldout"


def random_spec(seed: int, index: int, **fixed: Any) -> setups.JobSpec:
    """Job shape number `index` of the stream `seed` (job i is the same whatever the number of jobs drawn).

    The space: N_max in {1, 2, 4, 8}, N_min uniform in 1..N_max, H(n) = n + beta with beta in [-0.3, 0.6],
    soft deadline 8-72 h with the work taking 40-85% of it at N_max, hard deadline 1-1.6 x the soft one,
    restart overhead 0.05, 0.1 or 0.25 h; a third of the jobs cost-only (one deadline, as in Can't Be Late:
    with no value and no penalty a later hard deadline would make the soft one void), the others worth
    0.3-2 x their all-on-demand cost with a miss penalty of 0-1 x the value. `fixed` overrides fields of the drawn
    spec (`FIXED_FIELDS`; text is read as the field's type), and a drawn N_min or N_max gives way to a fixed one.
    """
    rng = np.random.default_rng([int(seed), int(index)])
    n_max = int(rng.choice([1, 2, 4, 8]))
    spec = setups.JobSpec(
        n_max=n_max,
        n_min=int(rng.integers(1, n_max + 1)),
        alpha=1.0,
        beta=round(float(rng.uniform(-0.3, 0.6)), 3),
        deadline_h=float(rng.integers(8, 73)),
        load=round(float(rng.uniform(0.4, 0.85)), 3),
        gamma=round(float(rng.uniform(1.0, 1.6)), 3),
        overhead_h=float(rng.choice([0.05, 0.1, 0.25])),
        value_factor=0.0 if rng.random() < 1 / 3 else round(float(rng.uniform(0.3, 2.0)), 3),
        miss_factor=round(float(rng.uniform(0.0, 1.0)), 3),
    )
    if spec.value_factor == 0:  # cost-only: nothing is lost after the soft deadline, so it is the hard one
        spec = replace(spec, gamma=1.0, miss_factor=0.0)
    if "model" in fixed:
        raise TraceError("job field model does not apply here: the drawn jobs' throughput is H(n) = alpha*n + beta; "
                         "fix alpha and beta instead")
    bad = sorted(set(fixed) - set(FIXED_FIELDS))
    if bad:
        raise TraceError(f"unknown job field(s) {', '.join(bad)}; the fields are {', '.join(FIXED_FIELDS)}")
    cast = {k: _field_value(k, v) for k, v in fixed.items()}
    if "n_min" in cast and "n_max" not in cast:
        cast["n_max"] = max(spec.n_max, cast["n_min"])
    if "n_max" in cast and "n_min" not in cast:
        cast["n_min"] = min(spec.n_min, cast["n_max"])
    try:
        return replace(spec, **cast)
    except JobError as exc:
        raise JobError(f"job shape {index} (seed {seed}): {exc}") from None


FIXED_FIELDS = ("deadline_h", "gamma", "load", "n_min", "n_max", "alpha", "beta", "overhead_h", "value_factor",
                "miss_factor")


def _field_value(name: str, value: Any) -> float | int:
    """A fixed job field as its type (`--job n_min=2` gives the text "2"), or an error naming the field."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TraceError(f"job field {name}={value!r} is not a number") from None
    if name in ("n_min", "n_max"):
        if not (np.isfinite(number) and number == int(number)):
            raise TraceError(f"job field {name}={value!r} is not a whole number")
        return int(number)
    return number


def _methods(horizon: int, cost_only: bool, w: int, solver: str, n_jobs: int, full: bool) -> dict:
    oracle = {"v": 1, "predictor": "oracle", "sigma": 0.0, "solver": solver}
    methods = {
        A3: ("select", {"n_jobs": n_jobs}),
        "A1_chc_oracle": ("chc", {"w": w, **oracle}),
        "A2_prediction_free": ("prediction_free", {}),
        "greedy": ("greedy", {}),
        "uniform_progress": ("uniform_progress", {}),
        "optimal": ("optimal", {"must_finish": cost_only, "solver": solver, "n_jobs": n_jobs}),
        "optimal_netted": ("optimal_netted", {"must_finish": cost_only, "solver": solver, "n_jobs": n_jobs}),
    }
    if full:
        methods["A1_chc_oracle_full"] = ("chc", {"w": horizon, **oracle})
    return methods


def bars(jobs: pd.DataFrame, full_rel: float = 0.01, window_rel: float = 0.10, tie: float = 0.05) -> pd.DataFrame:
    """One row per market of `jobs` (per-job rows of one job spec): mean utilities, deadline rates, fallback
    rates, and whether each bar of the module docstring holds (NaN where a method did not run)."""
    rows = []
    for market, sub in jobs.groupby("market", sort=False):
        g = sub.groupby("method")
        u, met = g["utility"].mean(), g["met_deadline"].mean()
        fb = g["fallback_rate"].mean() if "fallback_rate" in sub.columns else pd.Series(dtype=float)
        get = lambda s, k: float(s[k]) if k in s.index else float("nan")  # noqa: E731
        opt, up, gr, a3 = (get(u, k) for k in ("optimal", "uniform_progress", "greedy", A3))
        per_job = sub.pivot_table(index="job", columns="method", values="utility")
        net_binds = (float((~np.isclose(per_job["optimal"], per_job["optimal_netted"], rtol=1e-9, atol=1e-6)).mean())
                     if {"optimal", "optimal_netted"} <= set(per_job.columns) else float("nan"))
        row: dict[str, Any] = {"market": market, "jobs": int(sub["job"].nunique())}
        for k in u.index:
            row[f"U_{k}"] = float(u[k])
            row[f"met_{k}"] = float(met[k])
            if k in fb.index:
                row[f"fallback_{k}"] = float(fb[k])
        greedy_counts = get(met, "greedy") >= get(met, A3) - 1e-9
        best = max(up, gr) if greedy_counts else up
        row["a3_reference"] = "greedy" if greedy_counts and gr > up else "uniform_progress"

        row["net_binds"] = net_binds

        def near(label: str, rel: float) -> float:
            x = get(u, label)
            return float("nan") if np.isnan(x) or np.isnan(opt) else float(x >= opt - rel * abs(opt) - tie)

        def above(label: str, ref: float) -> float:
            x = get(u, label)
            return float("nan") if np.isnan(x) or np.isnan(ref) else float(x >= ref - tie)

        row["a1_full"] = near("A1_chc_oracle_full", full_rel)
        w_near, w_up = near("A1_chc_oracle", window_rel), above("A1_chc_oracle", up)
        row["a1_w"] = float("nan") if np.isnan(w_near) else float(w_near and w_up)
        row["a2"] = above("A2_prediction_free", up)
        row["a3"] = above(A3, best)
        # how far each method is from its bar's reference, so that a failed bar says by how much
        row["a1_full_gap"] = _gap(get(u, "A1_chc_oracle_full"), opt)
        row["a1_w_gap"] = _gap(get(u, "A1_chc_oracle"), opt)
        row["a2_margin"] = get(u, "A2_prediction_free") - up
        row["a3_margin"] = a3 - best
        rows.append(row)
    return pd.DataFrame(rows)


def _gap(x: float, opt: float) -> float:
    """(x - optimum) / |optimum|: 0 at the optimum, -0.05 five per cent below it (NaN where either is missing)."""
    if np.isnan(x) or np.isnan(opt):
        return float("nan")
    return (x - opt) / max(abs(opt), 1e-9)


MARGINS = {"a1_full": "a1_full_gap", "a1_w": "a1_w_gap", "a2": "a2_margin", "a3": "a3_margin"}
# how each margin reads: (scale, unit, what it is measured from)
MARGIN_UNITS = {"a1_full": (100.0, "%", "from the optimum"), "a1_w": (100.0, "%", "from the optimum"),
                "a2": (1.0, " $/job", "above uniform progress"), "a3": (1.0, " $/job", "above the better baseline")}


@dataclass
class HeldOut:
    """What `heldout_check` returns: per (market, job spec) the spec, the means and the bars; the per-job rows;
    and where they were written."""

    checks: pd.DataFrame
    jobs: pd.DataFrame
    out_dir: Path | None = None

    def summary(self) -> pd.DataFrame:
        """Per bar: runs checked, runs where it holds, and the mean and worst margin over them (`MARGINS`: A1's
        relative gap to the optimum, A2's $/job above uniform progress, A3's above the better baseline)."""
        c = self.checks
        out = []
        for b in BARS:
            if b not in c.columns:
                continue
            m = c.loc[c[b].notna(), MARGINS[b]] if MARGINS[b] in c.columns else pd.Series(dtype=float)
            out.append({"bar": b, "runs": int(c[b].notna().sum()), "holds": int((c[b] == 1).sum()),
                        "margin": MARGINS[b], "mean": float(m.mean()) if m.size else float("nan"),
                        "worst": float(m.min()) if m.size else float("nan")})
        return pd.DataFrame(out)


def heldout_check(markets: Iterable[str | Market] | str | Market, jobs: int = 8, seed: int = 0,
                  fixed: dict[str, Any] | None = None, indices: Sequence[int] | None = None,
                  stride_hours: float = 12.0, max_jobs: int | None = 40, w: int = 12, full_window: bool = True,
                  solver: str = "glpk", n_jobs: int = 1, out_dir: str | Path | None = None,
                  slot_hours: float = 1.0, od_price: float | None = None, spot_share: float | None = None,
                  progress: bool | None = False, full_rel: float = 0.01, window_rel: float = 0.10,
                  tie: float = 0.05, give_up: bool | None = None, skip_hours: float | None = None) -> HeldOut:
    """Run the bars of the module docstring for `jobs` random job specs (`random_spec(seed, i)`; `indices`
    picks which i) on every market: keys of `market.named.MARKET_SPECS`, trace paths (`"PATH#ZONE"` for one zone
    of a CSV) or `Market` objects. Jobs start every `stride_hours` after a week of history (the forecasters'
    and A3's warm-up; `skip_hours` to start earlier on a short trace), at most `max_jobs` per market. With `out_dir`, per-job rows go to
    `heldout_comparison_jobs.csv` as each (market, job spec, method) finishes, and a rerun resumes from them;
    the checks are written to `heldout_checks.csv`. `give_up`: whether the safety net may stop a job not worth
    finishing on demand (`policies.safety_net`), for every online method; None (the default): for every job with
    a value or a miss penalty, never for a cost-only job."""
    seed = check_seed(seed, PolicyError)
    check_max_jobs(max_jobs)
    if give_up is not None and not isinstance(give_up, (bool, np.bool_)):
        raise TraceError(f"give_up must be true, false or None (for jobs with a value), got {give_up!r}")
    check_positive(stride_hours, "stride_hours")
    if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
        raise TraceError(f"w must be a whole number of slots >= 1, got {w!r}")
    if indices is None:
        if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
            raise TraceError(f"jobs must be a whole number >= 1, got {jobs!r}")
        indices = range(int(jobs))
    specs = [(int(i), random_spec(seed, int(i), **(fixed or {}))) for i in indices]
    if isinstance(markets, (str, Market)):
        markets = [markets]
    pairs = [_label(*resolve_market(m, slot_hours, 24 * 21, seed, od_price, spot_share)) for m in markets]
    if not pairs:
        raise TraceError("heldout_check: no markets given")
    resolved = dict(pairs)
    if len(resolved) < len(pairs):
        raise TraceError(f"heldout_check: two markets have the same name ({', '.join(k for k, _ in pairs)}); "
                         "give each trace file its own name")

    from ..progress import Progress

    todo = [(key, mkt, i, spec) for i, spec in specs for key, mkt in resolved.items()]
    for key, mkt, i, spec in todo:  # every job is checked before the first one runs
        if fixed and "n_min" in fixed and spec.n_min > mkt.requested:
            raise JobError(f"job field n_min={spec.n_min} is more GPUs than market {key} offers "
                           f"({mkt.requested} requested)")
        try:
            spec.job(mkt).check_feasible(mkt.slot_hours)
        except JobError as exc:
            raise JobError(f"job shape {i} on market {key}: {exc}") from None
    checks, parts = [], []
    with Progress(total=len(todo), desc="held-out runs", unit="run", enabled=progress) as bar:
        for key, mkt, i, spec in todo:
            bar.stage(f"{key}, job {i}")
            job = spec.job(mkt)
            cost_only = job.value == 0 and job.miss_penalty == 0
            methods = _methods(horizon_slots(job, mkt.slot_hours), cost_only, int(w), solver, n_jobs, full_window)
            stops = (not cost_only) if give_up is None else bool(give_up)
            comp = main_comparison({f"{key} job {i}": mkt}, spec, methods, stride_hours=stride_hours,
                                   max_jobs=max_jobs, seed=seed, out_dir=out_dir, prefix=PREFIX,
                                   semantics=Semantics(give_up=stops), skip_hours=skip_hours)
            comp.jobs.insert(1, "job_spec", i)
            parts.append(comp.jobs)
            row = bars(comp.jobs, full_rel, window_rel, tie).iloc[0].to_dict()
            row.update(market=key, job_spec=i, cost_only=cost_only, give_up=stops,
                       **{f"spec_{k}": v for k, v in asdict(spec).items() if k not in ("model", "alpha")})
            row.update(work=job.work, value=job.value, miss_penalty=job.miss_penalty,
                       od_cost=float(comp.setups.iloc[0]["od_cost"]))
            checks.append(row)
            if out_dir is not None:
                _write(_ordered(checks), Path(out_dir))
            bar.update()
    return HeldOut(_ordered(checks), pd.concat(parts, ignore_index=True), None if out_dir is None else Path(out_dir))


def _ordered(checks: list[dict]) -> pd.DataFrame:
    """The verdicts first, then the means and the job's fields."""
    lead = ["market", "job_spec", "jobs", *BARS, "cost_only", "give_up", "a3_reference", "net_binds",
            *MARGINS.values()]
    table = pd.DataFrame(checks)
    return table[[c for c in lead if c in table.columns] + [c for c in table.columns if c not in lead]]


def _label(key: str, market: Market) -> tuple[str, Market]:
    """A trace path is shown by its file name and zone, not its whole path."""
    if key in MARKET_SPECS:
        return key, market
    path, _, zone = key.partition("#")
    return Path(path).name + (f"#{zone}" if zone else ""), market


def _write(checks: pd.DataFrame, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f"{PREFIX}_checks.csv.tmp"
    checks.to_csv(tmp, index=False)
    tmp.replace(out / f"{PREFIX}_checks.csv")
