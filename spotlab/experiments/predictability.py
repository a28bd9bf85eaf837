"""Availability and price predictability on the real traces of `markets/` (SPEC §5, §7 item 2), for notebook 02.

Plain functions returning tidy DataFrames:

- `load_markets` loads every file of `markets.MARKET_FILES` on one slot grid (reusing `markets.load_all_zones`);
- `price_autocorrelation` is the price counterpart of `markets.autocorrelation` (same columns);
- `evaluation_plan` decides, per (file, slot, target), the training window and whether there is enough
  history to evaluate at all, and says why not when there is not;
- `forecast_errors` runs the rolling-origin evaluation (`spotlab.predict.evaluate` tasks, never looks ahead)
  over every planned combination, with a tqdm progress bar;
- `best_models` picks the best model per (file, zone, slot, target) and gives its skill vs persistence per h;
- `error_meaning` turns MAEs into GPUs, fractions of the request and dollars on a job.

Training windows: `train_hours` of history (default three days), shortened where the trace is short so that at
least `min_origins` origins remain, but never below what every model needs (`min_history`); a combination
that cannot meet both is skipped with the reason recorded in the plan.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.locate import dataset_path
from ..market.load import trace_zones
from ..market.market import Market
from ..predict.base import slots_per
from ..predict.evaluate import score_task, zone_scores, zone_tasks
from ..predict.registry import make_predictor
from ..processes import at_most_cores
from .market_stats import MARKET_FILES, MarketFile, autocorrelation, load_all_zones
from .outputs import FIGURE, declare

# what notebook 02 writes
OUTPUTS = declare("02", autocorrelation=FIGURE, daily_profile=FIGURE, evaluation_plan="csv",
                  forecast_errors_by_zone="csv", forecast_error_vs_horizon=FIGURE, best_models=FIGURE,
                  error_meaning=FIGURE, error_meaning_by_zone="csv", quantile_calibration=FIGURE)
QUICK_MODELS = ("persistence", "seasonal_naive", "ets", "duration")
ALL_MODELS = ("persistence", "seasonal_naive", "ets", "arima", "gbm", "duration")
HORIZONS = (1, 2, 3, 6, 12)


def load_markets(
    files: Mapping[str, MarketFile] | None = None,
    slot_hours: float = 1 / 6,
    zones_limit: int | None = None,
    span_hours: float | None = None,
) -> dict[str, dict[str, Market]]:
    """Every file (key -> zone -> Market) on one slot grid; `zones_limit` keeps the first zones of each
    file and `span_hours` the first hours of each zone (quick runs)."""
    files = MARKET_FILES if files is None else files
    out: dict[str, dict[str, Market]] = {}
    for key, f in files.items():
        zones = trace_zones(dataset_path(f.relpath))[:zones_limit] if zones_limit else f.forecast_zones
        out[key] = load_all_zones(f.relpath, slot_hours, zones=zones, max_hours=span_hours)
    return out


def price_autocorrelation(markets: Mapping[str, Market], max_lag_hours: float = 24.0) -> pd.DataFrame:
    """Autocorrelation of the spot price vs lag (hours) per zone (`markets.autocorrelation` on prices)."""
    return autocorrelation(markets, max_lag_hours, target="price")


def _price_varies(m: Market) -> bool:
    return bool(m.has_spot_price) and float(np.ptp(np.asarray(m.spot_price, dtype=float))) > 1e-9


def _min_history(models: Sequence[str], slot_hours: float) -> dict[str, int]:
    return {name: make_predictor(name).min_history(slot_hours) for name in models}


def evaluation_plan(
    markets_by_slot: Mapping[float, Mapping[str, Mapping[str, Market]]],
    models: Sequence[str] = ALL_MODELS,
    horizons: Sequence[int] = HORIZONS,
    train_hours: float = 72.0,
    refit_hours: float = 24.0,
    min_origins: int = 24,
) -> pd.DataFrame:
    """One row per (file, slot_hours, target): `status` ("ok" or "skipped"), `reason`, the `models` that fit
    and the training window / refit period / number of origins used. Price is planned only where some zone's
    price varies (a constant list price has nothing to forecast). On a short trace, models needing more
    history than the window allows are dropped (and named in `reason`); with fewer than two models left the
    combination is skipped."""
    models = tuple(dict.fromkeys(("persistence", *models)))
    wmax = max(horizons)
    rows = []
    for slot_hours, markets in markets_by_slot.items():
        need = _min_history(models, slot_hours)
        for key, zones in markets.items():
            f = MARKET_FILES.get(key)
            n = min(len(m) for m in zones.values())
            targets = ["availability"]
            price_reason = ""
            if any(m.has_spot_price for m in zones.values()):
                if any(_price_varies(m) for m in zones.values()):
                    targets.append("price")
                else:
                    price_reason = "spot price constant over the span (list price): nothing to forecast"
            elif f is not None and not f.has_spot_price:
                price_reason = "the trace has no spot price"
            train = min(slots_per(train_hours, slot_hours), n - wmax - min_origins + 1)
            base = {"dataset": key, "slot_hours": slot_hours, "zones": len(zones), "slots": n,
                    "span_hours": n * slot_hours}
            fit = [m for m in models if need[m] <= train]
            dropped = [m for m in models if m not in fit]
            for target in targets:
                if "persistence" not in fit or len(fit) < 2:
                    reason = (f"too little history: {n} slots ({n * slot_hours:.0f} h) leave a training window of "
                              f"{max(train, 0)} slots after {min_origins} origins and h up to {wmax}; the models "
                              f"need {min((v for k, v in need.items() if k != 'persistence'), default=need['persistence'])} or more")
                    rows.append({**base, "target": target, "status": "skipped", "reason": reason})
                else:
                    reason = (f"short trace: dropped {', '.join(dropped)} (need more than {train} slots of history)"
                              if dropped else "")
                    rows.append({**base, "target": target, "status": "ok", "reason": reason, "models": ",".join(fit),
                                 "train_slots": int(train), "train_hours": train * slot_hours,
                                 "refit_every": slots_per(refit_hours, slot_hours),
                                 "origins": int(n - wmax - train + 1)})
            if price_reason:
                rows.append({**base, "target": "price", "status": "skipped", "reason": price_reason})
    cols = ["dataset", "slot_hours", "target", "status", "reason", "models", "zones", "slots", "span_hours",
            "train_slots", "train_hours", "refit_every", "origins"]
    return pd.DataFrame(rows).reindex(columns=cols)


def forecast_errors(
    files: Mapping[str, MarketFile] | None = None,
    slot_hours_list: Sequence[float] = (1 / 6, 1.0),
    models: Sequence[str] = ALL_MODELS,
    horizons: Sequence[int] = HORIZONS,
    zones_limit: int | None = None,
    span_hours: float | None = None,
    n_jobs: int = 1,
    train_hours: float = 72.0,
    refit_hours: float = 24.0,
    min_origins: int = 24,
    progress: bool = True,
    quantiles: Sequence[float] = (0.9,),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rolling-origin MAE / RMSE per (dataset, slot_hours, target, zone, model, h), and the plan.

    Returns `(errors, plan)`: `errors` has the columns of `evaluate_zones` (mae, skill_mae, rmse, smape, hit
    rates, `cover_q<q>` / `pinball_q<q>` of the assured forecasts at each probability in `quantiles`, timings)
    plus dataset, slot_hours, target, requested (GPUs, availability) and mean_price (price);
    `plan` is `evaluation_plan`, whose skipped rows say which combinations had too little history and why.
    """
    from joblib import Parallel, delayed

    from ..progress import tqdm_bar

    by_slot = {s: load_markets(files, s, zones_limit, span_hours) for s in slot_hours_list}
    plan = evaluation_plan(by_slot, models, horizons, train_hours, refit_hours, min_origins)
    todo = list(plan[plan["status"] == "ok"].itertuples(index=False))
    # every (combination, zone, model) in one pool of tasks, the costliest first: a pool per combination
    # would leave a worker idle while the other finishes that combination's last ARIMA or GBM
    tasks = [zone_tasks(by_slot[row.slot_hours][row.dataset], row.models.split(","), horizons=tuple(horizons),
                        target=row.target, train_slots=int(row.train_slots), refit_every=int(row.refit_every),
                        quantile=tuple(quantiles) or None) for row in todo]
    flat = [(i, k) for i, ts in enumerate(tasks) for k in range(len(ts))]
    flat.sort(key=lambda ik: -todo[ik[0]].origins * _COST.get(tasks[ik[0]][ik[1]][1], 1.0))
    runner = Parallel(n_jobs=at_most_cores(n_jobs), return_as="generator")(
        delayed(score_task)(tasks[i][k]) for i, k in flat)
    done = list(tqdm_bar(runner, total=len(flat), desc="forecast errors", enabled=bool(progress)))
    scores: list[list] = [[None] * len(ts) for ts in tasks]
    for (i, k), part in zip(flat, done):
        scores[i][k] = part
    parts = []
    for row, ts, sc in zip(todo, tasks, scores):
        zones = by_slot[row.slot_hours][row.dataset]
        res = zone_scores(ts, sc)
        res.insert(0, "target", row.target)
        res.insert(0, "slot_hours", row.slot_hours)
        res.insert(0, "dataset", row.dataset)
        res["requested"] = res["zone"].map({z: m.requested for z, m in zones.items()})
        res["mean_price"] = (res["zone"].map({z: float(np.mean(m.spot_price)) for z, m in zones.items()})
                             if row.target == "price" else np.nan)
        parts.append(res)
    errors = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return errors, plan


# relative cost of a model's rolling evaluation per origin (fits dominate): orders the pool of tasks only
_COST = {"gbm": 4.0, "arima": 3.0, "ets": 1.5}
KEYS = ["dataset", "zone", "slot_hours", "target"]


def best_models(errors: pd.DataFrame) -> pd.DataFrame:
    """Best model per (dataset, zone, slot_hours, target) by MAE averaged over the horizons, with its MAE and
    skill vs persistence (1 - MAE / persistence MAE) per horizon as columns `mae_h<h>` / `skill_h<h>`.
    Ties with persistence (e.g. a constant zone) go to persistence, the simplest model."""
    mean = errors.groupby(KEYS + ["model"], sort=False)["mae"].mean().reset_index()
    mean["not_persistence"] = mean["model"] != "persistence"  # False sorts first: ties go to persistence
    mean["mae_rounded"] = mean["mae"].round(12)  # float noise must not break a tie
    best = mean.sort_values(KEYS + ["mae_rounded", "not_persistence"]).groupby(KEYS, sort=False).head(1)
    best = best[KEYS + ["model", "mae"]].rename(columns={"mae": "mean_mae"})
    sel = errors.merge(best[KEYS + ["model"]], on=KEYS + ["model"])
    wide_skill = sel.pivot_table(index=KEYS, columns="h", values="skill_mae").add_prefix("skill_h")
    wide_mae = sel.pivot_table(index=KEYS, columns="h", values="mae").add_prefix("mae_h")
    out = best.set_index(KEYS).join(wide_mae).join(wide_skill).reset_index()
    out.columns = [str(c) for c in out.columns]
    return out.sort_values(KEYS).reset_index(drop=True)


def error_meaning(errors: pd.DataFrame, job_gpu_hours: float = 100.0) -> pd.DataFrame:
    """What the best model's MAE means, per (dataset, zone, slot_hours, target, h).

    Availability: MAE in GPUs and as a fraction of the requested GPUs. Price: MAE in USD per GPU-hour, as a
    fraction of the mean price, and the dollar error on pricing a job of `job_gpu_hours` GPU-hours.
    """
    best = best_models(errors)[KEYS + ["model"]]
    sel = errors.merge(best, on=KEYS + ["model"]).copy()
    avail = sel["target"] == "availability"
    sel["mae_gpus"] = np.where(avail, sel["mae"], np.nan)
    sel["mae_frac_requested"] = np.where(avail, sel["mae"] / sel["requested"], np.nan)
    sel["mae_usd_per_gpu_h"] = np.where(~avail, sel["mae"], np.nan)
    sel["mae_frac_price"] = np.where(~avail, sel["mae"] / sel["mean_price"], np.nan)
    sel[f"usd_error_{job_gpu_hours:g}_gpu_h_job"] = sel["mae_usd_per_gpu_h"] * job_gpu_hours
    sel["horizon_hours"] = sel["h"] * sel["slot_hours"]
    cols = KEYS + ["model", "h", "horizon_hours", "mae", "rmse", "mae_gpus", "mae_frac_requested", "requested",
                   "mae_usd_per_gpu_h", "mae_frac_price", "mean_price", f"usd_error_{job_gpu_hours:g}_gpu_h_job"]
    return sel[cols].sort_values(KEYS + ["h"]).reset_index(drop=True)
