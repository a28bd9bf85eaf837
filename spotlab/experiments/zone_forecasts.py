"""Per-zone forecasts of availability (spells) and price, by rolling origin on every zone of the shared sources.

A scheduler across zones needs, per zone, how long spot will last and how soon it comes back. `zone_forecasts`
scores registered predictors (through `predict.evaluate.rolling_origin`, which never looks ahead) on:

- `leaderboard`: the multi-region Can't Be Late leaderboard's 9 AWS V100 zones, windows 0-7, each window its own
  series of 1,107 ticks of 195 s; the model sees the window from its start only (origins from `warm_hours` in,
  trained on everything since the window's start); price too (the spot price moves there);
- `skynomad`: SkyNomad's 9 GCP H100 zones, full aligned traces of 600-s ticks (the price is a constant list
  price: not scored);
- `skypilot`: the 45-day AWS V100 availability files of us-east-1a and us-west-2a (195-s ticks, no price).

One tidy row per (source, target, zone, model, h, score): `value`, `n` (forecasts scored) and `skill`
(1 - value / persistence's, > 0 better) for the loss scores mae, rmse, brier (of P(available at t+h)),
brier_stay_up and brier_stay_down (of P(the current up / down spell lasts through t+h)). Windows of one zone are
pooled. `summary` pools the zones of a source. Parameters cut the run down for a quick test (`zones_limit`,
`windows`, `span_slots`); the full run uses joblib over (zone, model) tasks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..data.locate import dataset_path
from ..errors import ExperimentError
from ..market.load import load_market
from ..market.market import Market
from ..predict.base import slots_per
from ..predict.evaluate import ModelSpec, rolling_origin
from ..processes import at_most_cores
from .zone_benchmarks import LEADERBOARD_DIR, SKYNOMAD_DIR

SOURCES = ("leaderboard", "skynomad", "skypilot")
LEADERBOARD_ZONES = ("us-east-1a", "us-east-1c", "us-east-1d", "us-east-1f", "us-east-2a", "us-east-2b",
                     "us-west-2a", "us-west-2b", "us-west-2c")
SKYNOMAD_ZONES = ("asia-south2-b", "asia-southeast1-b", "europe-west3-c", "us-central1-a", "us-central1-c",
                  "us-east4-a", "us-east4-b", "us-west1-a", "us-west1-b")
SKYPILOT_DIR = "sky_spot_traces/skypilot-spot-traces/"
SKYPILOT_FILES = {z: f"availability__1-node__aws-02-15-2023__{z}_v100_1.json" for z in ("us-east-1a", "us-west-2a")}
AVAILABILITY_MODELS = ("persistence", "duration", "spells")
PRICE_MODELS = ("persistence", "reversion", "duration")
HORIZONS = (1, 6, 18, 36)
LOSSES = ("mae", "rmse", "brier", "brier_stay_up", "brier_stay_down")


@dataclass(frozen=True)
class Plan:
    """How one source is evaluated: training window, refit period and first origin (slots; None: defaults)."""

    train_hours: float | None  # None: everything since the series' start
    refit_hours: float
    warm_hours: float | None  # first origin this far into the series (None: the first full training window)


PLANS = {
    "leaderboard": Plan(None, 3.0, 2.0),
    "skynomad": Plan(72.0, 12.0, None),
    "skypilot": Plan(72.0, 12.0, None),
}


def source_series(source: str, zones_limit: int | None = None, windows: Sequence[int] = range(8),
                  span_slots: int | None = None, root: str | None = None) -> dict[str, list[Market]]:
    """Zone -> its series (a leaderboard zone has one per window) of `source`, the first `span_slots` of each."""
    if source == "leaderboard":
        files = {z: [f"{LEADERBOARD_DIR}{z}_v100_1__{i}.json" for i in windows] for z in LEADERBOARD_ZONES}
        kw: dict[str, Any] = {}
    elif source == "skynomad":
        files = {z: [f"{SKYNOMAD_DIR}{z}_h100_16__full.json"] for z in SKYNOMAD_ZONES}
        kw = {}
    elif source == "skypilot":
        files = {z: [SKYPILOT_DIR + f] for z, f in SKYPILOT_FILES.items()}
        kw = {"convention": "available"}  # in these files 1 = available (see the folder's README)
    else:
        raise ExperimentError(f"unknown source {source!r}; use one of {', '.join(SOURCES)}")
    out = {}
    for z in list(files)[:zones_limit]:
        markets = [load_market(dataset_path(rel, root), **kw) for rel in files[z]]
        out[z] = [m if span_slots is None else m.window(0, min(span_slots, len(m))) for m in markets]
    return out


def _settings(plan: Plan, n: int, slot_hours: float, wmax: int) -> dict[str, int]:
    train = n if plan.train_hours is None else slots_per(plan.train_hours, slot_hours)
    start = train - 1 if plan.warm_hours is None else slots_per(plan.warm_hours, slot_hours) - 1
    start = min(start, max(0, n - wmax - 1))
    return {"train_slots": train, "refit_every": slots_per(plan.refit_hours, slot_hours), "start": start}


def _score(markets: list[Market], spec: ModelSpec, target: str, plan: Plan, horizons: Sequence[int]) -> pd.DataFrame:
    """One model on every series of one zone: rolling origin per series, forecasts pooled, scored per h."""
    frames, res = [], None
    wmax = max(horizons)
    for m in markets:
        kw = _settings(plan, len(m), m.slot_hours, wmax)
        res = rolling_origin(m, spec, horizons=horizons, target=target, spells=target == "availability", **kw)
        frames.append(res.frame)
    assert res is not None
    return replace(res, frame=pd.concat(frames, ignore_index=True)).scores().reset_index()


def zone_forecasts(
    sources: Sequence[str] = SOURCES,
    models: Sequence[str] | Mapping[str, ModelSpec] = AVAILABILITY_MODELS,
    price_models: Sequence[str] | Mapping[str, ModelSpec] = PRICE_MODELS,
    horizons: Sequence[int] = HORIZONS,
    zones_limit: int | None = None,
    windows: Sequence[int] = range(8),
    span_slots: int | None = None,
    n_jobs: int = 2,
    root: str | None = None,
) -> pd.DataFrame:
    """Tidy scores per (source, target, zone, model, h, score); see the module doc. Persistence is always scored."""
    from joblib import Parallel, delayed

    def named(ms: Sequence[str] | Mapping[str, ModelSpec]) -> dict[str, ModelSpec]:
        d = dict(ms) if isinstance(ms, Mapping) else {m: m for m in ms}
        return {"persistence": "persistence", **d}

    tasks = []
    for source in sources:
        series = source_series(source, zones_limit, windows, span_slots, root)
        targets = [("availability", named(models))]
        if source == "leaderboard" and price_models:
            targets.append(("price", named(price_models)))
        for zone, markets in series.items():
            for target, ms in targets:
                for label, spec in ms.items():
                    tasks.append(((source, target, zone, label), markets, spec, target, PLANS[source]))
    parts = Parallel(n_jobs=at_most_cores(n_jobs))(
        delayed(_score)(markets, spec, target, plan, tuple(sorted(set(horizons)))) for _, markets, spec, target, plan in tasks)
    rows = []
    for (key, *_), sc in zip(tasks, parts):
        long = sc.melt(id_vars=["h", "n"], value_vars=[c for c in LOSSES if c in sc], var_name="score")
        for col, v in zip(("source", "target", "zone", "model"), key):
            long[col] = v
        if "n_up" in sc:  # the stay scores count origins in up / down spells only
            n_up = sc.set_index("h")["n_up"]
            up, down = long["score"] == "brier_stay_up", long["score"] == "brier_stay_down"
            long.loc[up, "n"] = long.loc[up, "h"].map(n_up).to_numpy()
            long.loc[down, "n"] = long.loc[down, "n"].to_numpy() - long.loc[down, "h"].map(n_up).to_numpy()
        rows.append(long)
    out = pd.concat(rows, ignore_index=True)[["source", "target", "zone", "model", "h", "score", "n", "value"]]
    return _skill(out, ["source", "target", "zone"])


def _skill(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    keys = by + ["h", "score"]
    ref = df[df["model"] == "persistence"].set_index(keys)["value"]
    base = ref.reindex(pd.MultiIndex.from_frame(df[keys])).to_numpy()
    out = df.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        out["skill"] = 1.0 - out["value"].to_numpy() / base
    out.loc[~(base > 0), "skill"] = float("nan")
    return out


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """The zones of each source pooled (scores weighted by the forecasts each zone scored), with skill."""
    d = rows.dropna(subset=["value"]).assign(w=lambda x: x["value"] * x["n"])
    g = d.groupby(["source", "target", "model", "h", "score"], as_index=False)[["w", "n"]].sum()
    g["value"] = g["w"] / g["n"].where(g["n"] > 0)
    return _skill(g.drop(columns="w"), ["source", "target"])
