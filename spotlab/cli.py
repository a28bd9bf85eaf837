"""The `spotlab` command line. Every user error ends in one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

from . import __version__
from .errors import SpotlabError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own errors, same shape as ours
        self.print_usage(sys.stderr)
        print(f"spotlab: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _key_value(text: str) -> tuple[str, str]:
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _finite(kind: str, positive: bool = False, nonneg: bool = False):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{kind} must be finite, got {text!r}")
        if positive and v <= 0:
            raise argparse.ArgumentTypeError(f"{kind} must be > 0, got {text!r}")
        if nonneg and v < 0:
            raise argparse.ArgumentTypeError(f"{kind} must be >= 0, got {text!r}")
        return v

    return parse


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="spotlab", description="Deadline-aware scheduling of LLM fine-tuning on spot and on-demand GPUs.")
    p.add_argument("--version", action="version", version=f"spotlab {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("simulate", help="replay a policy on a trace (or each window of it) and report the means",
                       description="Replay a scheduling policy on a market trace with the spotlab simulator.")
    s.add_argument("--trace", required=True, help="tidy market CSV (.csv/.csv.gz) or sky_spot JSON trace")
    s.add_argument("--windows", help="CSV of windows (window,start_tick,end_tick): one run per row")
    s.add_argument("--stride-hours", type=_finite("stride", positive=True),
                   help="cut the trace into jobs one after another: a window of the job's hard-deadline horizon "
                        "starting every STRIDE hours (the rounds of --policy select; default for select: back to back)")
    s.add_argument("--zone", help="zone to use from a tidy CSV holding several")
    s.add_argument("--policy", required=True, help="policy name (see `spotlab policies`)")
    s.add_argument("--param", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="policy parameter, repeatable")
    s.add_argument("--work-hours", required=True, type=_finite("work", positive=True),
                   help="work, in hours of one GPU")
    s.add_argument("--deadline-hours", required=True, type=_finite("deadline", positive=True),
                   help="soft deadline d (hours from the start of each run)")
    s.add_argument("--hard-deadline-hours", type=_finite("hard deadline", positive=True),
                   help="hard deadline gamma*d (default: the soft deadline)")
    s.add_argument("--restart-overhead-hours", required=True, type=_finite("overhead", nonneg=True),
                   help="reconfiguration overhead delta (hours of zero progress, billed)")
    s.add_argument("--on-demand-price", type=_finite("on-demand price", nonneg=True), help="USD per GPU-hour, overrides the trace")
    s.add_argument("--spot-price", type=_finite("spot price", nonneg=True), help="USD per GPU-hour, overrides the trace")
    s.add_argument("--gpus", type=_positive_int, help="GPUs the job runs on (N_min = N_max = N)")
    s.add_argument("--gpus-min", type=_positive_int, help="N_min")
    s.add_argument("--gpus-max", type=_positive_int, help="N_max")
    s.add_argument("--throughput-alpha", type=_finite("alpha"), default=1.0, help="H(n) = alpha*n + beta")
    s.add_argument("--throughput-beta", type=_finite("beta"), default=0.0)
    s.add_argument("--value", type=_finite("value"), default=0.0, help="value V0 of finishing by the soft deadline")
    s.add_argument("--miss-penalty", type=_finite("miss penalty", nonneg=True), default=0.0)
    s.add_argument("--slot-hours", type=_finite("slot length", positive=True), help="resample to this slot length")
    s.add_argument("--solver", choices=["glpk", "highs"], help="solver for optimisation-based policies")
    s.add_argument("--seed", type=int, default=0, help="seed of every random element (recorded in the output)")
    s.add_argument("--json-convention", choices=["preempted", "available"], default="preempted",
                   help="sky_spot JSON values: 1 = preempted (Can't Be Late) or counts of available instances")
    s.add_argument("--semantics", choices=["auto", "cant-be-late", "spotlab"], default="auto",
                   help="auto: Can't Be Late rules for sky_spot JSON traces, spotlab's for tidy CSVs")
    s.add_argument("--billing", choices=["fractional", "full"], help="override: bill the last slot in full or by use")
    s.add_argument("--safety-net", choices=["strict", "cbl", "off"], help="override the deadline safety net")
    s.add_argument("--per-run", help="write the per-run summary to this CSV")
    s.add_argument("--records", help="write the per-slot record to this CSV")
    s.add_argument("--json", action="store_true", help="print one JSON object (otherwise a short text summary)")

    f = sub.add_parser("forecast", help="score a forecasting model against persistence on a trace (rolling origin)",
                       description="Forecast availability or price at several horizons from every origin of a trace "
                                   "(refitting on a rolling window, never looking ahead) and report MAE and RMSE per "
                                   "horizon for the model and for persistence on the same origins.")
    f.add_argument("--trace", required=True, help="tidy market CSV (.csv/.csv.gz) or sky_spot JSON trace")
    f.add_argument("--zone", help="zone to use from a tidy CSV holding several")
    f.add_argument("--target", choices=["availability", "price"], default="availability")
    f.add_argument("--model", required=True, help="model name (persistence, seasonal_naive, ets, arima, gbm, duration)")
    f.add_argument("--param", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="model parameter, repeatable")
    f.add_argument("--horizons", default="1,2,3,6,12", help="comma-separated horizons in slots (default 1,2,3,6,12)")
    f.add_argument("--slot-hours", type=_finite("slot length", positive=True),
                   help="resample to this slot length (default: the trace's native step)")
    f.add_argument("--train-hours", type=_finite("training window", positive=True),
                   help="hours of history each fit uses (default: one week, or half the trace if shorter)")
    f.add_argument("--refit-every", type=_positive_int, help="slots between refits (default: one day of slots)")
    f.add_argument("--json-convention", choices=["preempted", "available"], default="preempted",
                   help="sky_spot JSON values: 1 = preempted (Can't Be Late) or counts of available instances")
    f.add_argument("--json", action="store_true", help="print one JSON object (otherwise a short table)")

    w = sub.add_parser("sweep", help="run a notebook over a grid of parameters (resumable; local or on Dask)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Execute a notebook (jupytext percent .py or .ipynb) with papermill once per point\n"
                                   "of a parameter grid. Each point runs in OUT/points/<hash>/ (its `out_dir`) and\n"
                                   "leaves record.json there; the same command again skips the recorded points, so an\n"
                                   "interrupted sweep resumes. All points are collected in one table.",
                       epilog="grid file (YAML): parameter -> list of values, the points are their cartesian "
                              "product;\nan optional `fixed:` mapping gives values shared by every point:\n\n"
                              "  alpha: [0.5, 1.0, 2.0]\n  seed: [0, 1]\n  fixed:\n    quick: true\n\n"
                              "Every name must be defined in the notebook's `parameters` cell; `out_dir` is set by "
                              "the sweep.\nA notebook that writes sweep_result.json (a flat JSON object) into "
                              "out_dir adds its values\nas columns of the table. Exit code 1 if a point failed or is missing, "
                              "2 for bad input.")
    w.add_argument("notebook", help="jupytext percent .py (e.g. notebooks/06_policy_selection.py) or .ipynb")
    w.add_argument("--grid", required=True, help="YAML grid file (format below)")
    w.add_argument("--jobs", type=_positive_int,
                   help="points run at once in local processes (default 1: notebooks often parallelise inside)")
    w.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run the points on this Dask distributed scheduler (workers must share OUT's filesystem)")
    w.add_argument("--out", help="output folder (default build/sweeps/NOTEBOOK__GRID); rerun with the same one "
                                 "to resume")
    w.add_argument("--table", help="collected table (default OUT/sweep.csv; a .parquet name writes Parquet)")
    w.add_argument("--retry-failed", action="store_true", help="run the points recorded as failed again")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")

    from .cotune.cli import add_parsers as cotune_parsers

    cotune_parsers(sub, _finite)

    sub.add_parser("policies", help="list the registered policies")
    d = sub.add_parser("data", help="show where spotlab finds its datasets")
    d.add_argument("--json", action="store_true")
    return p


def cmd_simulate(args) -> int:
    from .runs import load_episodes, make_job, run_policy, settings_for

    from .policies import policy_class

    started = time.perf_counter()
    policy_class(args.policy)  # an unknown name fails before any data is read
    job = make_job(args.work_hours, args.deadline_hours, args.hard_deadline_hours, args.restart_overhead_hours,
                   args.gpus, args.gpus_min, args.gpus_max, args.throughput_alpha, args.throughput_beta,
                   args.value, args.miss_penalty)
    stride = args.stride_hours
    if stride is None and args.policy == "select" and not args.windows:
        stride = job.hard_deadline_h  # rounds are jobs one after another
    if stride is not None and args.windows:
        raise SpotlabError("give either --windows or --stride-hours, not both")
    loaded = load_episodes(args.trace, args.windows, args.zone, args.slot_hours, args.json_convention,
                           args.spot_price, args.on_demand_price, stride_hours=stride,
                           horizon_hours=job.hard_deadline_h)
    settings = settings_for(args.semantics, loaded.kind, args.billing, args.safety_net)
    params = dict(args.param)
    if args.solver and "solver" in policy_class(args.policy).param_names():
        params.setdefault("solver", args.solver)
    result = run_policy(args.policy, params, loaded.episodes, job, settings, seed=args.seed)
    out = result.metrics()
    for key in ("rounds", "regret", "regret_slope"):  # policy selection's headline numbers
        if key in result.policy_report:
            out[key] = result.policy_report[key]
    out.update({
        "policy_report": result.policy_report,
        "params": params,
        "seed": args.seed,
        "trace": str(args.trace),
        "windows": str(args.windows) if args.windows else None,
        "stride_hours": stride,
        "slot_hours": loaded.market.slot_hours,
        "semantics": {"billing": settings.billing, "safety_net": settings.safety_net},
        "job": {"work": job.work, "deadline_h": job.deadline_h, "hard_deadline_h": job.hard_deadline_h,
                "n_min": job.n_min, "n_max": job.n_max, "overhead_h": job.overhead_h, "value": job.value,
                "miss_penalty": job.miss_penalty},
        "elapsed_s": round(time.perf_counter() - started, 3),
    })
    if args.per_run:
        result.summary().to_csv(args.per_run, index=False)
    if args.records:
        result.records().to_csv(args.records, index=False)
    if args.json:
        print(json.dumps(out, allow_nan=False, default=_jsonable))
    else:
        print(f"{out['policy']}: {out['runs']} run(s), mean cost {out['mean_cost']:.2f}, mean utility "
              f"{out['mean_utility']:.2f}, deadline met {100 * out['deadline_met_fraction']:.1f}%")
    return 0


WEEK_HOURS = 168.0


def _default_train_slots(n: int, slot_hours: float, min_history: int) -> int:
    """One week of slots, or half the trace when it is shorter than two weeks (so that half of it is
    scored), but never fewer slots than the model needs."""
    week = max(1, int(round(WEEK_HOURS / slot_hours)))
    return max(min_history, min(week, n // 2))


def cmd_forecast(args) -> int:
    from .errors import PredictionError
    from .predict import make_predictor, rolling_origin, target_series
    from .predict.evaluate import parse_horizons
    from .traces import load_trace

    started = time.perf_counter()
    params = dict(args.param)
    model = make_predictor(args.model, **params)  # unknown names and parameters fail before any data is read
    horizons = parse_horizons(args.horizons)
    market = load_trace(args.trace, args.zone, args.slot_hours, args.json_convention)
    series = target_series(market, args.target)
    n, s_hours = len(series.values), series.slot_hours
    need = model.min_history(s_hours)
    if args.train_hours is not None:
        train = max(1, int(round(args.train_hours / s_hours)))
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
    res = rolling_origin(series, model, **kw)
    base = res if args.model == "persistence" else rolling_origin(series, "persistence", **kw)

    def rows(r) -> list[dict]:
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
        "elapsed_s": round(time.perf_counter() - started, 3),
    }
    if args.json:
        print(json.dumps(out, allow_nan=False, default=_jsonable))
    else:
        print(f"{args.model} vs persistence, {args.target}, {out['n_forecasts']} forecasts, slot {s_hours:g} h")
        print(f"{'h':>4} {'mae':>10} {'mae_pers':>10} {'rmse':>10} {'rmse_pers':>10}")
        for a, b in zip(out["model"], out["persistence"]):
            print(f"{a['h']:>4} {a['mae']:>10.4g} {b['mae']:>10.4g} {a['rmse']:>10.4g} {b['rmse']:>10.4g}")
    return 0


def _jsonable(v):
    try:
        return v.item()
    except AttributeError:
        return str(v)


def cmd_sweep(args) -> int:
    from pathlib import Path

    from .sweep import SweepError, run_sweep

    if args.jobs is not None and args.scheduler:
        raise SweepError("give either --jobs (local processes) or --scheduler (Dask), not both")
    out = args.out or str(Path("build") / "sweeps" / f"{Path(args.notebook).stem}__{Path(args.grid).stem}")
    result = run_sweep(args.notebook, args.grid, out, jobs=args.jobs or 1, scheduler=args.scheduler,
                       retry_failed=args.retry_failed, progress=not args.no_progress, table=args.table)
    print(result.summary())
    return 0 if result.ok else 1


def cmd_policies(args) -> int:
    from .policies import REGISTRY

    for name, target in REGISTRY.items():
        print(f"{name:20s} {target}")
    return 0


def cmd_data(args) -> int:
    from . import data

    root = data.data_root()
    info = {"data_root": str(root) if root else None, "cache": str(data.cache_dir()), "datasets": data.list_datasets()}
    if args.json:
        print(json.dumps(info))
    else:
        print(f"data root: {info['data_root'] or '(none found: set SPOTLAB_DATA)'}\ncache:     {info['cache']}")
        for name in info["datasets"]:
            print(f"  {name}")
    return 0


def _cotune(name: str):
    def run(args) -> int:
        from .cotune import cli

        return getattr(cli, name)(args)

    return run


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {"simulate": cmd_simulate, "forecast": cmd_forecast, "policies": cmd_policies, "data": cmd_data,
               "sweep": cmd_sweep, "configs": _cotune("cmd_configs"), "cluster": _cotune("cmd_cluster")}[args.command]
    try:
        return handler(args)
    except SpotlabError as exc:
        print(f"spotlab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("spotlab: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # an internal bug: still one clear line unless --debug
        if args.debug:
            raise
        print(f"spotlab: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
