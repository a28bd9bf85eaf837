"""`spotlab forecast`: score a forecasting model against persistence on a trace by rolling-origin evaluation
(refit on a rolling window, never looking ahead), the check of SPEC §5 on a user's own trace."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from .args import finite, jsonable, key_value, key_values, positive_int, progress_option

WEEK_HOURS = 168.0


def register(commands: Any) -> None:
    f = commands.add_parser("forecast", help="score a forecasting model against persistence on a trace (rolling origin)",
                            description="Forecast availability or price at several horizons from every origin of a "
                                        "trace (refitting on a rolling window, never looking ahead) and report MAE "
                                        "and RMSE per horizon for the model and for persistence on the same origins.")
    f.add_argument("--trace", required=True,
                   help="trace file: tidy market CSV, sky_spot JSON or marketplace JSONL (the format is read from the file)")
    f.add_argument("--zone", help="zone of a tidy CSV or marketplace file holding several")
    f.add_argument("--target", choices=["availability", "price"], default="availability",
                   help="the series to forecast: spot GPUs available (default) or the spot price")
    f.add_argument("--model", required=True,
                   help="model name: persistence, seasonal_naive, ets, arima, gbm, duration, reversion, or auto (the "
                        "others side by side, per horizon the one that has beaten persistence so far)")
    f.add_argument("--param", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="model parameter, once each")
    f.add_argument("--horizons", default="1,2,3,6,12", help="comma-separated horizons in slots (default 1,2,3,6,12)")
    f.add_argument("--slot-hours", type=finite("slot length", positive=True),
                   help="resample to this slot length (default: the trace's native step)")
    f.add_argument("--train-hours", type=finite("training window", positive=True),
                   help="hours of history each fit uses (default: one week, or half the trace if shorter)")
    f.add_argument("--refit-every", type=positive_int, help="slots between refits (default: one day of slots)")
    f.add_argument("--json-convention", choices=["preempted", "available"],
                   help="sky_spot JSON traces only: their values are 1 = preempted (Can't Be Late; the default) or "
                        "counts of available instances")
    f.add_argument("--json", action="store_true", help="print one JSON object (otherwise a short table)")
    f.add_argument("--no-timings", action="store_true",
                   help="leave the `timings` key out of the JSON, so that a rerun prints the same bytes")
    progress_option(f)
    f.set_defaults(run=run)


def _default_train_slots(n: int, slot_hours: float, min_history: int) -> int:
    """One week of slots, or half the trace when it is shorter than two weeks (so that half of it is
    scored), but never fewer slots than the model needs."""
    week = max(1, int(round(WEEK_HOURS / slot_hours)))
    return max(min_history, min(week, n // 2))


def run(args: argparse.Namespace) -> int:
    from ..errors import PredictionError
    from ..market.load import load_market
    from ..predict.evaluate import parse_horizons, rolling_origin, target_series
    from ..predict.registry import make_predictor
    from ..progress import Progress

    started = time.perf_counter()
    if args.no_timings and not args.json:
        raise PredictionError("--no-timings leaves the timings out of the --json output; give --json too")
    params = key_values(args.param, "--param")
    model = make_predictor(args.model, **params)  # unknown names and parameters fail before any data is read
    horizons = parse_horizons(args.horizons)
    market = load_market(args.trace, zone=args.zone, slot_hours=args.slot_hours, convention=args.json_convention)
    series = target_series(market, args.target)
    n, s_hours = len(series.values), series.slot_hours
    need = model.min_history(s_hours)
    if args.train_hours is not None:
        train = int(round(args.train_hours / s_hours))
        if train < 1:
            raise PredictionError(f"--train-hours {args.train_hours:g} is shorter than one slot of {s_hours:g} h")
        if train < need:
            raise PredictionError(
                f"--train-hours {args.train_hours:g} is {train} slots of {s_hours:g} h; model {args.model!r} needs "
                f"at least {need} slots ({need * s_hours:g} h)")
    else:
        train = _default_train_slots(n, s_hours, need)
    every = args.refit_every if args.refit_every is not None else max(1, int(round(24.0 / s_hours)))
    if n < train + horizons[-1]:
        raise PredictionError(
            f"too little history: the trace has {n} slots of {s_hours:g} h ({n * s_hours:g} h); a training window "
            f"of {train} slots plus the largest horizon {horizons[-1]} needs at least {train + horizons[-1]} slots")
    kw = dict(horizons=horizons, train_slots=train, refit_every=every, target=args.target)
    n_origins = max(0, n - train - horizons[-1] + 1)
    with Progress(total=2, desc=f"forecast {args.model}", unit="model", enabled=args.progress) as bar:
        bar.stage(f"forecast {args.model}: {n_origins} origins, refit every {every} slots")
        res = rolling_origin(series, model, **kw)
        bar.update()
        bar.stage("forecast persistence (the baseline)")
        base = res if args.model == "persistence" else rolling_origin(series, "persistence", **kw)
        bar.update()

    def rows(r: Any) -> list[dict]:
        sc = r.scores()
        return [{"h": int(h), "mae": float(sc.at[h, "mae"]), "rmse": float(sc.at[h, "rmse"])} for h in sc.index]

    out = {
        "horizons": list(horizons),
        "model": rows(res),
        "persistence": rows(base),
        "n_forecasts": int(res.timing["n_origins"]),
        "model_name": args.model,
        "params": model.get_params(),
        "trace": str(args.trace),
        "zone": market.meta.get("zone", args.zone),
        "target": args.target,
        "slot_hours": s_hours,
        "train_slots": int(train),
        "refit_every": int(every),
        "n_slots": int(n),
        "n_fits": int(res.timing["n_fits"]),
        "fallbacks": int(res.timing["fallbacks"]),
    }
    if not args.no_timings:
        out["timings"] = {"total_s": round(time.perf_counter() - started, 3)}
    if args.json:
        print(json.dumps(out, allow_nan=False, default=jsonable))
    else:
        print(f"{args.model} vs persistence, {args.target}, {out['n_forecasts']} forecasts, slot {s_hours:g} h")
        print(f"{'h':>4} {'mae':>10} {'mae_pers':>10} {'rmse':>10} {'rmse_pers':>10}")
        for a, b in zip(out["model"], out["persistence"]):
            print(f"{a['h']:>4} {a['mae']:>10.4g} {b['mae']:>10.4g} {a['rmse']:>10.4g} {b['rmse']:>10.4g}")
    return 0
