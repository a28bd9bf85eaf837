"""Rolling-origin evaluation that never looks ahead (SPEC §5: error vs horizon on real traces).

For every origin t in [start, stop) the model has seen y[..t] only and forecasts y[t+1..t+w]:

- every `refit_every` slots it is re-fitted on the last `train_slots` slots (y[t-train_slots+1..t]);
  ARIMA warm-starts from its previous parameters;
- between refits the fitted model is *kept and fed the new observation* (`update`: the fitted parameters
  are re-used, the state moves on; no re-estimation), so each forecast conditions on everything up to its
  origin. Forecasting from the latest fit without the new observations would only handicap every model
  against persistence.

The model only ever receives slices that end at the origin, so altering data after t cannot change the
forecasts made at t or before; the tests check this for every model. Origins end at n - max(horizons) by
default so that every horizon is scored on the same origins.

With `spells=True` (availability) each origin also records the forecast probability that the current spell (up:
at least one GPU, or down) lasts through t+h (`spell_lasts`): a model's own (`p_spell_lasts`, as `spells` has)
or else read off its point path (1 while every forecast up to t+h stays on the origin's side, else 0).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import PredictionError
from ..market.market import Market
from ..processes import at_most_cores
from . import metrics
from .base import Predictor, check_slot_hours, slots_per
from .forecaster import TARGETS, Forecaster
from .registry import MODELS, make_predictor
from .spells import UP_AT

ModelSpec = str | Predictor | Callable[[], Predictor]
DEFAULT_HORIZONS = (1, 2, 3, 6, 12)


# ------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True, eq=False)
class TargetSeries:
    """One target of a market as a plain series, with what the models need to know about it."""

    values: np.ndarray
    slot_hours: float
    t0: int  # slots since midnight of values[0] (drives hour-of-day features)
    requested: int | None
    target: str
    name: str = "series"


def target_series(market: Market, target: str = "availability") -> TargetSeries:
    """The availability or spot price of `market`, with slot length, clock offset and requested GPUs."""
    if target not in TARGETS:
        raise PredictionError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
    if target == "availability":
        values, requested = np.asarray(market.avail, dtype=float), int(market.requested)
    else:
        if not market.has_spot_price:
            raise PredictionError(f"{market.name}: the trace has no spot price; forecast target='availability'")
        values, requested = np.asarray(market.spot_price, dtype=float), None
    t0 = 0
    if market.start is not None:
        since_midnight = (market.start - market.start.normalize()).total_seconds() / 3600.0
        t0 = int(round(since_midnight / market.slot_hours))
    return TargetSeries(values, float(market.slot_hours), t0, requested, target, market.name)


def parse_horizons(horizons: Any) -> tuple[int, ...]:
    """Horizons as sorted unique whole slots >= 1; accepts "1,2,3,6,12" too."""
    raw = horizons.split(",") if isinstance(horizons, str) else horizons
    try:
        items = list(raw)
    except TypeError:
        items = [raw]
    if not items:
        raise PredictionError("horizons: give at least one horizon (whole slots >= 1), e.g. 1,2,3,6,12")
    out = []
    for v in items:
        try:
            f = float(v.strip()) if isinstance(v, str) else float(v)
        except (TypeError, ValueError):
            raise PredictionError(f"horizons: {v!r} is not a whole number of slots") from None
        if isinstance(v, bool) or not f.is_integer() or f < 1:
            raise PredictionError(f"horizons: {v!r} is not a whole number of slots >= 1")
        out.append(int(f))
    return tuple(sorted(set(out)))


def _levels(quantile: float | Sequence[float] | None) -> tuple[float, ...]:
    if quantile is None:
        return ()
    qs = [quantile] if np.isscalar(quantile) else list(quantile)
    for q in qs:
        if isinstance(q, bool) or not isinstance(q, (int, float, np.floating)) or not 0 < q < 1:
            raise PredictionError(f"quantile must be a probability strictly between 0 and 1 (got {q!r})")
    return tuple(sorted(set(float(q) for q in qs)))


def _whole(value: Any, label: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise PredictionError(f"{label} must be a whole number >= {minimum} (got {value!r})")
    return int(value)


def build_model(model: ModelSpec, params: Mapping[str, Any] | None = None) -> Predictor:
    """A fresh predictor from a registry name (+ params), a predictor to clone, or a factory."""

    if isinstance(model, str):
        return make_predictor(model, **dict(params or {}))
    if params:
        raise PredictionError("params apply to a model given by name only")
    if isinstance(model, Predictor):
        return model.clone()
    if callable(model):
        built = model()
        if not isinstance(built, Predictor):
            raise PredictionError(f"the model factory returned {type(built).__name__}, not a Predictor")
        return built
    raise PredictionError(f"model must be a name, a Predictor or a factory (got {type(model).__name__})")


# ------------------------------------------------------------------------------------------ results


@dataclass(frozen=True, eq=False)
class RollingResult:
    """Forecasts and outcomes per (origin, horizon), and how long fitting and forecasting took.

    `frame` columns: origin (index into the series), h, forecast (point, clipped), actual, refit (a fit
    happened at this origin) and one `q<level>` column of assured forecasts per quantile level.
    `timing`: fit_s, forecast_s (update + predict), n_fits, n_origins, fallbacks (fits that fell back to
    persistence: constant history or failed estimation).
    """

    frame: pd.DataFrame
    model: str
    target: str
    requested: int | None
    horizons: tuple[int, ...]
    at_least: tuple[int, ...]
    quantiles: tuple[float, ...]
    slot_hours: float
    train_slots: int
    refit_every: int
    timing: dict = field(default_factory=dict)

    def scores(self) -> pd.DataFrame:
        """Per horizon: n, mae, rmse, smape; brier, hit_ge<k>, prec_ge<k> (availability); cover_q<q>, pinball_q<q>;
        with spell columns (`rolling_origin(spells=True)`): brier_stay (all origins), n_up, brier_stay_up (origins in
        an up spell: how long spot lasts), brier_stay_down (in a down spell: how soon it comes back)."""
        rows = []
        for h, g in self.frame.groupby("h", sort=True):
            f, a = g["forecast"].to_numpy(), g["actual"].to_numpy()
            row: dict[str, Any] = {"h": int(h), "n": int(f.size), "mae": metrics.mae(f, a),
                                   "rmse": metrics.rmse(f, a), "smape": metrics.smape(f, a)}
            if self.target == "availability":
                share = float(self.requested or 1)
                row["brier"] = metrics.brier(np.clip(f / share, 0, 1), np.clip(a / share, 0, 1))
                if "lasts" in g:
                    p, o, up = g["lasts"].to_numpy(), g["lasted"].to_numpy(), g["up"].to_numpy()
                    row["brier_stay"] = metrics.brier(p, o)
                    row["n_up"] = int(up.sum())
                    row["brier_stay_up"] = metrics.brier(p[up], o[up])
                    row["brier_stay_down"] = metrics.brier(p[~up], o[~up])
                for k in self.at_least:
                    row[f"hit_ge{k}"] = metrics.hit_rate(f, a, k)
                    row[f"prec_ge{k}"] = metrics.precision(f, a, k)
            for q in self.quantiles:
                fq = g[f"q{q:g}"].to_numpy()
                level = 1.0 - q if self.target == "availability" else q
                row[f"cover_q{q:g}"] = metrics.coverage(fq, a, self.target)
                row[f"pinball_q{q:g}"] = metrics.pinball(fq, a, level)
            rows.append(row)
        return pd.DataFrame(rows).set_index("h")


# --------------------------------------------------------------------------------------- evaluation


def rolling_origin(
    series: Market | TargetSeries | np.ndarray | Sequence[float],
    model: ModelSpec,
    horizons: Any = DEFAULT_HORIZONS,
    train_slots: int | None = None,
    refit_every: int | None = None,
    slot_hours: float | None = None,
    t0: int | None = None,
    target: str = "availability",
    requested: int | None = None,
    quantile: float | Sequence[float] | None = None,
    start: int | None = None,
    stop: int | None = None,
    *,
    at_least: Sequence[int] | None = None,
    params: Mapping[str, Any] | None = None,
    round_point: bool = False,
    spells: bool = False,
) -> RollingResult:
    """Forecast from every origin in [start, stop) with periodic refits; see the module docstring.

    `series` is a `Market` (its slot length, clock and requested GPUs are used unless given), a
    `TargetSeries` or a plain array. Defaults: `train_slots` one week of slots, `refit_every` one day,
    `start` = train_slots - 1 (the first origin with a full window), `stop` = n - max(horizons).
    `quantile` (one or several probabilities q) adds assured forecasts (see `Forecaster`); `at_least`
    lists the k of the "at least k GPUs" hit rates (default 1 and requested); `round_point` rounds
    availability point forecasts to whole GPUs; `spells` adds the columns lasts (forecast probability that the
    origin's spell lasts through t+h), lasted (it did) and up (the origin is in an up spell).
    """
    ys, s_hours, zero, req = _resolve(series, target, slot_hours, t0, requested)
    y = np.asarray(ys, dtype=float)
    n = y.size
    hs = parse_horizons(horizons)
    wmax = hs[-1]
    levels = _levels(quantile)
    train = slots_per(168.0, s_hours) if train_slots is None else _whole(train_slots, "train_slots", 1)
    every = slots_per(24.0, s_hours) if refit_every is None else _whole(refit_every, "refit_every", 1)
    first = train - 1 if start is None else _whole(start, "start", 0)
    last = n - wmax if stop is None else _whole(stop, "stop", 1)
    if last > n - wmax:
        raise PredictionError(
            f"stop={last} leaves origins without an outcome: the series has {n} slots and the largest horizon "
            f"is {wmax}, so stop must be <= {n - wmax}"
        )
    if first >= last:
        raise PredictionError(
            f"no origins to evaluate: origins run from {first} (start; the first full training window of "
            f"{train} slots ends there) to stop={last} (series of {n} slots minus the largest horizon {wmax}); "
            "give a longer series, a shorter train_slots or smaller horizons"
        )
    predictor = build_model(model, params)
    predictor.check_params()
    fc = Forecaster(predictor, target, req, round_point=round_point)
    ks = _at_least(at_least, target, req)
    if spells and target != "availability":
        raise PredictionError("spells=True scores availability spells; the target is 'price'")

    origins = np.arange(first, last)
    point = np.empty((origins.size, wmax))
    assured = {q: np.empty((origins.size, wmax)) for q in levels}
    lasts = np.empty((origins.size, wmax)) if spells else None
    refit = np.zeros(origins.size, dtype=bool)
    fit_s = forecast_s = 0.0
    fallbacks = 0
    last_fit: int | None = None
    for i, t in enumerate(origins):
        tic = time.perf_counter()
        if last_fit is None or t - last_fit >= every:
            lo = max(0, t - train + 1)
            fc.fit(y[lo:t + 1], t0=zero + lo, slot_hours=s_hours)
            fit_s += time.perf_counter() - tic
            tic = time.perf_counter()
            last_fit, refit[i] = t, True
            fallbacks += predictor.fallback_ is not None
        else:
            fc.update(y[t:t + 1])
        point[i] = fc.predict(wmax)
        for q in levels:
            assured[q][i] = fc.predict_quantile(wmax, q)
        if lasts is not None:
            lasts[i] = spell_lasts(predictor, point[i], y[t])
        forecast_s += time.perf_counter() - tic

    cols = np.asarray(hs) - 1
    n_h = len(hs)
    data: dict[str, np.ndarray] = {
        "origin": np.repeat(origins, n_h),
        "h": np.tile(np.asarray(hs), origins.size),
        "forecast": point[:, cols].ravel(),
        "actual": y[origins[:, None] + np.asarray(hs)[None, :]].ravel(),
        "refit": np.repeat(refit, n_h),
    }
    for q in levels:
        data[f"q{q:g}"] = assured[q][:, cols].ravel()
    if lasts is not None:
        up = y >= UP_AT
        change = np.r_[np.flatnonzero(up[1:] != up[:-1]) + 1, n]  # slots where the state differs from the last
        next_change = change[np.searchsorted(change, origins, side="right")]
        data["lasts"] = lasts[:, cols].ravel()
        data["lasted"] = (origins[:, None] + np.asarray(hs)[None, :] < next_change[:, None]).ravel()
        data["up"] = np.repeat(up[origins], n_h)
    timing = {"fit_s": fit_s, "forecast_s": forecast_s, "n_fits": int(refit.sum()),
              "n_origins": int(origins.size), "fallbacks": int(fallbacks)}
    label = model if isinstance(model, str) else predictor.name
    return RollingResult(pd.DataFrame(data), label, target, req, hs, ks, levels, s_hours, train, every, timing)


def spell_lasts(model: Predictor, path: np.ndarray, last: float) -> np.ndarray:
    """P(the spell under way at the origin lasts through t+h), h = 1..len(path): the model's own where it has one
    (`p_spell_lasts`), else 1 while the point path stays on the side (up: >= 0.5 GPU) of the last value, then 0."""
    own = getattr(model, "p_spell_lasts", None)
    if callable(own):
        return np.asarray(own(path.size), dtype=float)
    side = (np.asarray(path) >= UP_AT) == (last >= UP_AT)
    return np.cumprod(side).astype(float)


def _resolve(series: Any, target: str, slot_hours: float | None, t0: int | None,
             requested: int | None) -> tuple[np.ndarray, float, int, int | None]:
    if target not in TARGETS:
        raise PredictionError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
    if isinstance(series, Market):
        series = target_series(series, target)
    if isinstance(series, TargetSeries):
        if series.target != target:
            raise PredictionError(f"the series holds {series.target!r} but target={target!r} was asked")
        if slot_hours is not None and check_slot_hours(slot_hours) != series.slot_hours:
            raise PredictionError(
                f"slot_hours={slot_hours:g} differs from the series' {series.slot_hours:g}; resample the trace instead"
            )
        values, s_hours = series.values, series.slot_hours
        zero = series.t0 if t0 is None else t0
        req = series.requested if requested is None else requested
    else:
        values = np.asarray(series, dtype=float)
        if values.ndim != 1:
            raise PredictionError(f"the series must be 1-D (got shape {values.shape})")
        s_hours = 1.0 if slot_hours is None else check_slot_hours(slot_hours)
        zero = 0 if t0 is None else t0
        req = requested
    return values, s_hours, _whole(zero, "t0", 0), req


def _at_least(at_least: Sequence[int] | None, target: str, requested: int | None) -> tuple[int, ...]:
    if target != "availability":
        return ()
    if at_least is None:
        return tuple(sorted({1, requested})) if requested else (1,)
    return tuple(sorted({_whole(k, "at_least k", 1) for k in at_least}))


# --------------------------------------------------------------------------------------- comparisons


def _named(models: Sequence[ModelSpec] | Mapping[str, ModelSpec] | None) -> dict[str, ModelSpec]:

    if models is None:
        named: dict[str, ModelSpec] = {m: m for m in MODELS}
    elif isinstance(models, Mapping):
        named = dict(models)
    elif isinstance(models, str):
        named = {models: models}
    else:
        named = {}
        for m in models:
            label = m if isinstance(m, str) else getattr(m, "name", None) or getattr(m, "__name__", repr(m))
            named[label] = m
    if "persistence" not in named:
        named = {"persistence": "persistence", **named}
    return named


def _scored(label: str, series: Any, spec: ModelSpec, kw: dict) -> pd.DataFrame:
    res = rolling_origin(series, spec, **kw)
    sc = res.scores().reset_index()
    sc.insert(0, "model", label)
    for key in ("fit_s", "forecast_s", "n_fits", "fallbacks"):
        sc[key] = res.timing[key]
    return sc


def _with_skill(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """skill_mae = 1 - MAE / MAE of persistence at the same horizon (> 0: better than persistence)."""
    base = df[df["model"] == "persistence"].set_index(by + ["h"])["mae"]
    key = pd.MultiIndex.from_frame(df[by + ["h"]]) if by else pd.Index(df["h"])
    ref = base.reindex(key).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        skill = np.where(ref > 0, 1.0 - df["mae"].to_numpy() / ref, np.where(df["mae"].to_numpy() == 0, 0.0, -np.inf))
    out = df.copy()
    out.insert(out.columns.get_loc("mae") + 1, "skill_mae", skill)
    for col in ("brier", "brier_stay_up", "brier_stay_down"):  # 1 - score / persistence's (> 0: better)
        if col in out:
            ref = df[df["model"] == "persistence"].set_index(by + ["h"])[col].reindex(key).to_numpy()
            with np.errstate(divide="ignore", invalid="ignore"):
                out[f"skill_{col}"] = np.where(ref > 0, 1.0 - out[col].to_numpy() / ref, np.nan)
    return out


def compare(
    series: Any,
    models: Sequence[ModelSpec] | Mapping[str, ModelSpec] | None = None,
    n_jobs: int = 1,
    **kw: Any,
) -> pd.DataFrame:
    """Scores of several models (persistence always included) on one series, one row per (model, h).

    Models are names, predictors or factories (a mapping gives them labels); other keywords go to
    `rolling_origin`. Adds `skill_mae` (1 - MAE / persistence MAE) and the fit / forecast seconds.
    """
    named = _named(models)
    if n_jobs == 1:
        parts = [_scored(label, series, spec, kw) for label, spec in named.items()]
    else:
        from joblib import Parallel, delayed

        parts = Parallel(n_jobs=at_most_cores(n_jobs))(delayed(_scored)(label, series, spec, kw) for label, spec in named.items())
    return _with_skill(pd.concat(parts, ignore_index=True), [])


def zone_tasks(
    zones: Mapping[str, Any] | Sequence[Market],
    models: Sequence[ModelSpec] | Mapping[str, ModelSpec] | None = None,
    **kw: Any,
) -> list[tuple[str, str, Any, ModelSpec, dict]]:
    """The independent pieces of `evaluate_zones`: one (zone, model label, series, model, keywords) per zone and
    model, in its order. Run each with `score_task` (anywhere, in any order) and join them with `zone_scores`."""
    if isinstance(zones, Mapping):
        items = dict(zones)
    else:
        items = {}
        for m in zones:
            if not isinstance(m, Market):
                raise PredictionError("a list of zones must hold Market objects; pass a mapping name -> series otherwise")
            items[str(m.meta.get("zone", m.name))] = m
    if not items:
        raise PredictionError("evaluate_zones: no zones given")
    named = _named(models)
    return [(z, label, s, spec, kw) for z, s in items.items() for label, spec in named.items()]


def score_task(task: tuple[str, str, Any, ModelSpec, dict]) -> pd.DataFrame:
    """One model's rolling-origin scores on one zone (a task of `zone_tasks`)."""
    _, label, series, spec, kw = task
    return _scored(label, series, spec, kw)


def zone_scores(tasks: Sequence[tuple], parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """`evaluate_zones`' frame from its tasks and their scores (the same order)."""
    for (z, *_), part in zip(tasks, parts):
        part.insert(0, "zone", z)
    return _with_skill(pd.concat(parts, ignore_index=True), ["zone"])


def evaluate_zones(
    zones: Mapping[str, Any] | Sequence[Market],
    models: Sequence[ModelSpec] | Mapping[str, ModelSpec] | None = None,
    n_jobs: int = -1,
    **kw: Any,
) -> pd.DataFrame:
    """`compare` over several zones in parallel (joblib, one task per zone and model).

    `zones` maps a zone name to a `Market`, `TargetSeries` or array, or is a list of markets (named by
    their `meta["zone"]` or name). Returns one row per (zone, model, h) with `skill_mae` per zone.
    """
    from joblib import Parallel, delayed

    tasks = zone_tasks(zones, models, **kw)
    parts = Parallel(n_jobs=at_most_cores(n_jobs))(delayed(score_task)(t) for t in tasks)
    return zone_scores(tasks, parts)
