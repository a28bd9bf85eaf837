"""The `spotlab` command line. Every user error ends in one line on stderr and exit code 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time

from .. import __version__
from ..errors import SpotlabError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """No abbreviated options (`--deadline` must not silently mean `--deadline-hours`), and argparse's own
    errors in the same one-line shape as spotlab's."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _key_value(text: str) -> tuple[str, str]:
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _finite(kind: str, positive: bool = False, nonneg: bool = False, maximum: float | None = None):
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"{kind} must be finite, got {text!r}")
        if maximum is not None and abs(v) > maximum:
            raise argparse.ArgumentTypeError(f"{kind} must be at most {maximum:g}, got {text!r}")
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
    s.add_argument("--skip-hours", type=_finite("skip", nonneg=True),
                   help="with --stride-hours: hours of the trace before the first job (default 168: a week of "
                        "history for every job)")
    s.add_argument("--zone", help="zone to use from a tidy CSV holding several (not for a JSON trace: it has one)")
    s.add_argument("--policy", required=True, help="policy name (see `spotlab policies`)")
    s.add_argument("--param", action="append", default=[], type=_key_value, metavar="KEY=VALUE",
                   help="policy parameter, repeatable; `spotlab policies NAME` lists them with defaults")
    s.add_argument("--work-hours", required=True, type=_finite("work", positive=True),
                   help="work, in hours of one GPU")
    s.add_argument("--deadline-hours", required=True, type=_finite("deadline", positive=True),
                   help="soft deadline d (hours from the start of each run)")
    s.add_argument("--hard-deadline-hours", type=_finite("hard deadline", positive=True),
                   help="hard deadline gamma*d (default: the soft deadline)")
    s.add_argument("--restart-overhead-hours", required=True, type=_finite("overhead", nonneg=True),
                   help="reconfiguration overhead delta (hours of zero progress, billed)")
    s.add_argument("--on-demand-price", type=_finite("on-demand price", nonneg=True, maximum=MAX_PRICE),
                   help="USD per GPU-hour, overrides the trace")
    s.add_argument("--spot-price", type=_finite("spot price", nonneg=True, maximum=MAX_PRICE),
                   help="USD per GPU-hour, overrides the trace")
    s.add_argument("--gpus", type=_positive_int, help="GPUs the job runs on (N_min = N_max = N; default 1); "
                                                       "not together with --gpus-min/--gpus-max")
    s.add_argument("--gpus-min", type=_positive_int, help="N_min: fewest GPUs the job can run on (default 1)")
    s.add_argument("--gpus-max", type=_positive_int, help="N_max: most GPUs the job can use (default 1)")
    s.add_argument("--throughput-alpha", type=_finite("alpha"), default=1.0,
                   help="throughput H(n) = alpha*n + beta in one-GPU-hours of work per hour (default 1)")
    s.add_argument("--throughput-beta", type=_finite("beta"), default=0.0,
                   help="constant term beta of H(n) (default 0); H(n) must be > 0 for every allowed n")
    s.add_argument("--value", type=_finite("value"), default=0.0,
                   help="value V0 of finishing by the soft deadline, USD (default 0: utility = -cost)")
    s.add_argument("--miss-penalty", type=_finite("miss penalty", nonneg=True), default=0.0,
                   help="USD lost when the job is not done by the hard deadline (default 0)")
    s.add_argument("--slot-hours", type=_finite("slot length", positive=True), help="resample to this slot length")
    s.add_argument("--solver", choices=["glpk", "highs"], help="solver for optimisation-based policies")
    s.add_argument("--seed", type=int, help="the one seed of every random element: the simulation's and the "
                                             "policy's own (`--param seed=S` is the same seed); default 0, recorded "
                                             "in the output")
    s.add_argument("--json-convention", choices=["preempted", "available"], default="preempted",
                   help="sky_spot JSON values: 1 = preempted (Can't Be Late) or counts of available instances")
    s.add_argument("--semantics", choices=["auto", "cant-be-late", "spotlab"], default="auto",
                   help="auto: Can't Be Late rules for sky_spot JSON traces, spotlab's for tidy CSVs")
    s.add_argument("--billing", choices=["fractional", "full"], help="override: bill the last slot in full or by use")
    s.add_argument("--safety-net", choices=["strict", "cbl", "off"], help="override the deadline safety net")
    s.add_argument("--give-up", action="store_true",
                   help="let the safety net stop a job when finishing it on demand would cost more than its "
                        "remaining value plus the miss penalty (it then earns -miss-penalty)")
    s.add_argument("--per-run", help="write the per-run summary to this CSV file")
    s.add_argument("--records", help="write the per-slot record to this CSV file")
    s.add_argument("--json", action="store_true", help="print one JSON object (otherwise a short text summary)")
    s.add_argument("--no-timings", action="store_true",
                   help="leave the `timings` key out of the JSON, so that a rerun prints the same bytes")
    _progress_option(s)

    f = sub.add_parser("forecast", help="score a forecasting model against persistence on a trace (rolling origin)",
                       description="Forecast availability or price at several horizons from every origin of a trace "
                                   "(refitting on a rolling window, never looking ahead) and report MAE and RMSE per "
                                   "horizon for the model and for persistence on the same origins.")
    f.add_argument("--trace", required=True, help="tidy market CSV (.csv/.csv.gz) or sky_spot JSON trace")
    f.add_argument("--zone", help="zone to use from a tidy CSV holding several")
    f.add_argument("--target", choices=["availability", "price"], default="availability",
                   help="the series to forecast: spot GPUs available (default) or the spot price")
    f.add_argument("--model", required=True,
                   help="model name: persistence, seasonal_naive, ets, arima, gbm, duration, reversion, or auto (the others "
                        "side by side, per horizon the one that has beaten persistence so far)")
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
    f.add_argument("--no-timings", action="store_true",
                   help="leave the `timings` key out of the JSON, so that a rerun prints the same bytes")
    _progress_option(f)

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
    _progress_option(w)

    h = sub.add_parser("heldout", help="check A1/A2/A3's bars on random jobs on your own traces (resumable)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Draw random job shapes (1-8 GPUs, any N_min, beta < 0 and > 0, value jobs and\n"
                                   "cost-only jobs), run the online policies, the baselines and the hindsight optimum\n"
                                   "on the same jobs of each market, and say per (market, job shape) whether each bar\n"
                                   "holds (see spotlab.experiments.heldout):\n"
                                   "  a1_full  CHC, perfect forecasts, window over the whole job: within 1% of\n"
                                   "           the optimum\n"
                                   "  a1_w     CHC, perfect forecasts, window W: within 10% of the optimum and\n"
                                   "           >= uniform progress\n"
                                   "  a2       prediction_free defaults: >= uniform progress\n"
                                   "  a3       select defaults: >= the better of uniform progress and greedy (greedy\n"
                                   "           counted where it meets the deadline at least as often as A3)\n"
                                   "then, per bar, the cells where it holds and the mean and worst margin over them\n"
                                   "(A1: % from the optimum; A2, A3: $/job above their reference).\n"
                                   "Rows go to OUT as they finish; the same command again resumes.")
    h.add_argument("markets", nargs="+", metavar="MARKET",
                   help="a trace file (tidy CSV or sky_spot JSON), PATH#ZONE for one zone of a CSV, or a notebook "
                        "market key (h100, v100_prices, ...)")
    h.add_argument("--jobs", type=_positive_int, default=8, help="random job shapes (default 8)")
    h.add_argument("--seed", type=int, default=0,
                   help="seed of the job shapes, the policies and a synthetic market (default 0)")
    h.add_argument("--job", type=_key_value, action="append", default=[], metavar="FIELD=VALUE",
                   help="fix a field of every job shape (JobSpec: deadline_h, gamma, load, n_min, n_max, beta, "
                        "overhead_h, value_factor, miss_factor), repeatable")
    h.add_argument("--stride-hours", type=_finite("stride", positive=True), default=12.0,
                   help="a new job every STRIDE hours, after a week of history (default 12)")
    h.add_argument("--max-jobs", type=_positive_int, default=40, help="jobs per market and shape (default 40)")
    h.add_argument("--w", type=_positive_int, default=12, help="A1's window in slots (default 12)")
    h.add_argument("--no-full-window", action="store_true", help="skip the a1_full bar (CHC over the whole job)")
    h.add_argument("--slot-hours", type=_finite("slot", positive=True), default=1.0, help="slot length (default 1 h)")
    h.add_argument("--od-price", type=_finite("on-demand price", positive=True),
                   help="USD per GPU-hour, for traces without an on-demand price")
    h.add_argument("--spot-share", type=_finite("spot share", positive=True),
                   help="spot price = share x on-demand, for traces without a spot price")
    h.add_argument("--solver", choices=("glpk", "highs"), default="glpk",
                   help="MILP solver of the optimum and of CHC's windows")
    h.add_argument("--give-up", choices=("auto", "on", "off"), default="auto",
                   help="may the safety net stop a job not worth finishing on demand? auto (default): for jobs "
                        "with a value or a miss penalty, as the optimum may leave them unfinished")
    h.add_argument("--out", default=os.path.join("build", "heldout"),
                   help="output folder (default build/heldout): heldout_checks.csv, heldout_comparison_jobs.csv")
    h.add_argument("--json", action="store_true", help="print the checks as JSON records (otherwise a table)")
    _progress_option(h)

    from .cotune import add_parsers as cotune_parsers  # argparse only: the CoTune modules load when run

    cotune_parsers(sub, _finite, _progress_option)

    from .rl import add_parsers as rl_parsers  # argparse only: the agent (torch) loads when `spotlab rl` runs

    rl_parsers(sub, _finite, _positive_int, _progress_option)

    pol = sub.add_parser("policies", help="list the policies with their parameters (defaults and meaning)",
                         description="Without NAME: every registered policy, one line each, with its parameters "
                                     "and defaults. With NAME: that policy's parameters, defaults and meaning.")
    pol.add_argument("name", nargs="?", help="a policy name, e.g. chc")
    d = sub.add_parser("data", help="show where spotlab finds its datasets")
    d.add_argument("--json", action="store_true", help="print one JSON object (data root, cache, datasets)")
    return p


def _progress_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress bar on stderr (default: when stderr is a terminal)")


# Policies known not to look at the week before each window: they skip cutting it (30,000 windows: 0.5 GB);
# every other policy (chc, select, slack_reserve, any new one) gets it.
NO_HISTORY = ("on_demand", "greedy", "uniform_progress", "prediction_free", "optimal")
MAX_PRICE = 1e9  # USD per GPU-hour: beyond this a run's cost can overflow to inf


def _output_file(path: str | None, flag: str) -> None:
    """Check an output file before the long computation, not after it."""
    if path is None:
        return
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        raise SpotlabError(f"{flag} {path} is a folder; give a file name, e.g. {p / 'out.csv'}")
    if not p.parent.is_dir():
        raise SpotlabError(f"{flag} {path}: folder {p.parent} does not exist")


def _one_seed(args, params: dict) -> int:
    """`--seed S` and `--param seed=S` are the same seed: it seeds the simulation and the policy."""
    given = params.pop("seed", None)
    if given is not None:
        try:
            given = int(given)
        except ValueError:
            raise SpotlabError(f"--param seed={given!r} is not a whole number") from None
        if args.seed is not None and args.seed != given:
            raise SpotlabError(f"--seed {args.seed} and --param seed={given} disagree; give one seed")
    return args.seed if args.seed is not None else (given if given is not None else 0)


class _Tracked:
    """A policy seen through a progress bar: its preparation (`reset`: the optimum's solves, the pool of
    `select`) as one stage, then one tick per simulated slot. Everything else is the policy's own."""

    def __init__(self, policy, bar, block: tuple[int, int] = (0, 1)) -> None:
        self._policy, self._bar, self._block = policy, bar, block

    def __getattr__(self, name: str):
        return getattr(self._policy, name)

    def reset(self, ctx) -> None:
        name = getattr(self._policy, "name", "policy")
        i, n = self._block
        self._horizon = ctx.horizon
        if i == 0:
            self._bar.stage(f"{name}: preparing {ctx.episodes.n} window(s)")
        self._policy.reset(ctx)
        if i == 0:
            self._bar.bar.reset(total=ctx.horizon * n)
            self._bar.stage(f"{name}: slots" + (f" of {n} blocks of windows" if n > 1 else ""))

    def act(self, obs):
        self._bar.set(self._block[0] * self._horizon + obs.t)
        return self._policy.act(obs)


def cmd_simulate(args) -> int:
    import numpy as np

    from ..progress import Progress
    from ..policies.registry import make_policy, policy_class
    from ..jobs.job import make_job
    from ..market.load import load_market
    from ..market.windows import HISTORY_HOURS, cut_windows
    from ..params import init_parameters
    from ..policies.run import run_policy
    from ..policies.semantics import semantics_for

    started = time.perf_counter()
    cls = policy_class(args.policy)  # an unknown name fails before any data is read
    if args.gpus is not None and (args.gpus_min is not None or args.gpus_max is not None):
        raise SpotlabError("give either --gpus N (N_min = N_max = N) or --gpus-min/--gpus-max, not both")
    params = dict(args.param)
    seed = _one_seed(args, params)
    accepted = init_parameters(cls)
    if "seed" in accepted:
        params["seed"] = seed
    if args.solver and "solver" in accepted:
        params.setdefault("solver", args.solver)
    policy = make_policy(args.policy, params)  # bad parameters fail before any data is read, too
    _output_file(args.per_run, "--per-run")
    _output_file(args.records, "--records")
    job = make_job(args.work_hours, args.deadline_hours, args.hard_deadline_hours, args.restart_overhead_hours,
                   args.gpus, args.gpus_min, args.gpus_max, args.throughput_alpha, args.throughput_beta,
                   args.value, args.miss_penalty)
    stride = args.stride_hours
    if stride is None and args.policy == "select" and not args.windows:
        stride = job.hard_deadline_h  # rounds are jobs one after another
    if stride is not None and args.windows:
        raise SpotlabError("give either --windows or --stride-hours, not both")
    if args.skip_hours is not None and stride is None:
        raise SpotlabError("--skip-hours goes with --stride-hours (jobs one after another)")
    market = load_market(args.trace, zone=args.zone, slot_hours=args.slot_hours, convention=args.json_convention,
                         spot_price=args.spot_price, od_price=args.on_demand_price)
    episodes = cut_windows(market, windows=args.windows, stride_hours=stride, horizon_hours=job.hard_deadline_h,
                           skip_hours=None if stride is None else
                           (args.skip_hours if args.skip_hours is not None else HISTORY_HOURS),
                           history_hours=0.0 if args.policy in NO_HISTORY else HISTORY_HOURS)
    settings = semantics_for(market, args.semantics, args.billing, args.safety_net, args.give_up)
    loaded_s = time.perf_counter()
    with Progress(desc=args.policy, unit="slot", enabled=args.progress) as bar:
        block = [(0, 1)]
        result = run_policy(args.policy, params, episodes, job, settings, seed=seed,
                            on_block=lambda i, n: block.__setitem__(0, (i, n)),
                            wrap=lambda p: _Tracked(p, bar, block[0]),
                            keep="all" if args.records else "summary" if args.per_run else "metrics")
    simulated_s = time.perf_counter()
    if not np.all(np.isfinite(result.cost)):
        raise SpotlabError("a run's cost is not a finite number: the prices are too large to add up "
                           f"(keep them below {MAX_PRICE:g} USD per GPU-hour)")
    out = result.metrics()
    report = dict(result.policy_report)
    timings = {k: report.pop(k) for k in list(report) if "seconds" in k or k.endswith("_s")}
    for key in ("rounds", "regret", "regret_slope"):  # policy selection's headline numbers
        if key in report:
            out[key] = report[key]
    out.update({
        "policy_report": report,
        "params": policy.get_params() if hasattr(policy, "get_params") else params,
        "seed": seed,
        "trace": str(args.trace),
        "zone": args.zone,
        "windows": str(args.windows) if args.windows else None,
        "stride_hours": stride,
        "skip_hours": None if stride is None else (args.skip_hours if args.skip_hours is not None else HISTORY_HOURS),
        "slot_hours": market.slot_hours,
        "semantics": {"billing": settings.billing, "safety_net": settings.safety_net, "give_up": settings.give_up},
        "job": {"work_hours": args.work_hours, "deadline_hours": job.deadline_h,
                "hard_deadline_hours": job.hard_deadline_h, "restart_overhead_hours": job.overhead_h,
                "gpus_min": job.n_min, "gpus_max": job.n_max, "throughput_alpha": args.throughput_alpha,
                "throughput_beta": args.throughput_beta, "value": job.value, "miss_penalty": job.miss_penalty},
    })
    if args.per_run:
        result.summary().to_csv(args.per_run, index=False)
    if args.records:
        result.records().to_csv(args.records, index=False)
    timings.update(load_s=round(loaded_s - started, 3), simulate_s=round(simulated_s - loaded_s, 3),
                   total_s=round(time.perf_counter() - started, 3))
    if not args.no_timings:
        out["timings"] = timings
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
    from ..errors import PredictionError
    from ..predict.registry import make_predictor
    from ..predict.evaluate import rolling_origin, target_series
    from ..market.load import load_market
    from ..predict.evaluate import parse_horizons

    started = time.perf_counter()
    params = dict(args.param)
    model = make_predictor(args.model, **params)  # unknown names and parameters fail before any data is read
    horizons = parse_horizons(args.horizons)
    market = load_market(args.trace, zone=args.zone, slot_hours=args.slot_hours, convention=args.json_convention)
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
    from ..progress import Progress

    n_origins = max(0, n - train - horizons[-1] + 1)
    with Progress(total=2, desc=f"forecast {args.model}", unit="model", enabled=args.progress) as bar:
        bar.stage(f"forecast {args.model}: {n_origins} origins, refit every {every} slots")
        res = rolling_origin(series, model, **kw)
        bar.update()
        bar.stage("forecast persistence (the baseline)")
        base = res if args.model == "persistence" else rolling_origin(series, "persistence", **kw)
        bar.update()

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
    }
    if not args.no_timings:
        out["timings"] = {"total_s": round(time.perf_counter() - started, 3)}
    if args.json:
        print(json.dumps(out, allow_nan=False, default=_jsonable))
    else:
        print(f"{args.model} vs persistence, {args.target}, {out['n_forecasts']} forecasts, slot {s_hours:g} h")
        print(f"{'h':>4} {'mae':>10} {'mae_pers':>10} {'rmse':>10} {'rmse_pers':>10}")
        for a, b in zip(out["model"], out["persistence"]):
            print(f"{a['h']:>4} {a['mae']:>10.4g} {b['mae']:>10.4g} {a['rmse']:>10.4g} {b['rmse']:>10.4g}")
    return 0


def cmd_heldout(args) -> int:
    from ..experiments.heldout import BARS, MARGIN_UNITS, heldout_check

    if args.seed < 0:
        raise SpotlabError(f"--seed must be >= 0, got {args.seed}")
    res = heldout_check(args.markets, jobs=args.jobs, seed=args.seed, fixed=dict(args.job),
                        stride_hours=args.stride_hours, max_jobs=args.max_jobs, w=args.w,
                        full_window=not args.no_full_window, solver=args.solver, out_dir=args.out,
                        slot_hours=args.slot_hours, od_price=args.od_price, spot_share=args.spot_share,
                        progress=args.progress, give_up={"auto": None, "on": True, "off": False}[args.give_up])
    c = res.checks
    if args.json:
        print(c.to_json(orient="records"))
        return 0
    mark = {1.0: "yes", 0.0: "NO"}
    cols = [("optimal", "opt"), ("A1_chc_oracle_full", "A1 full"), ("A1_chc_oracle", f"A1 w={args.w}"),
            ("A2_prediction_free", "A2"), ("A3_select", "A3"), ("uniform_progress", "UP"), ("greedy", "greedy")]
    cols = [(k, t) for k, t in cols if f"U_{k}" in c.columns]
    bars = [b for b in BARS if b in c.columns and c[b].notna().any()]
    width = max(len(str(m)) for m in c["market"])
    print(f"{'market':{width}s} {'job':>3s} " + " ".join(f"{b:>7s}" for b in bars)
          + "  mean utility $/job: " + " ".join(f"{t:>9s}" for _, t in cols) + "  net binds")
    for _, r in c.iterrows():
        print(f"{r['market']:{width}s} {int(r['job_spec']):3d} "
              + " ".join(f"{mark.get(r[b], '-'):>7s}" for b in bars) + "  " + " " * 19
              + " ".join(f"{r[f'U_{k}']:9.1f}" for k, _ in cols) + f"  {r.get('net_binds', float('nan')):9.0%}")
    said = []
    for _, b in res.summary().iterrows():
        if b["bar"] not in bars:
            continue
        k, u, what = MARGIN_UNITS[b["bar"]]
        said.append(f"{b['bar']} holds on {b['holds']} of {b['runs']} (mean {b['mean'] * k:+.2f}{u} {what}, "
                    f"worst {b['worst'] * k:+.2f}{u})")
    print("\n".join(said) + f"\nper-job rows and checks in {args.out}")
    return 0


def _jsonable(v):
    try:
        return v.item()
    except AttributeError:
        return str(v)


def cmd_sweep(args) -> int:
    from pathlib import Path

    from ..errors import SweepError
    from ..notebooks.sweep.run import run_sweep

    if args.jobs is not None and args.scheduler:
        raise SweepError("give either --jobs (local processes) or --scheduler (Dask), not both")
    out = args.out or str(Path("build") / "sweeps" / f"{Path(args.notebook).stem}__{Path(args.grid).stem}")
    result = run_sweep(args.notebook, args.grid, out, jobs=args.jobs or 1, scheduler=args.scheduler,
                       retry_failed=args.retry_failed, progress=args.progress, table=args.table)
    print(result.summary())
    return 0 if result.ok else 1


# What each policy parameter means, for `spotlab policies`; defaults are read from the classes themselves.
PARAM_HELP: dict[str, str] = {
    "hysteresis": "stay on on-demand until spot is back and progress is 2 restarts ahead of the line",
    "solver": "MILP solver: glpk or highs",
    "time_limit": "seconds per solve; a time-out keeps the best schedule found (its gap is reported)",
    "mip_gap": "relative optimality gap at which a solve stops",
    "must_finish": "require the work done by the hard deadline (else the miss penalty is priced in)",
    "n_jobs": "worker processes (-1: all cores; 1 inside a worker)",
    "w": "look-ahead window in slots",
    "v": "commitment: slots executed from each plan before replanning",
    "predictor": "forecasting model (spotlab forecast --model names) or oracle",
    "sigma": "the oracle's forecast error, sigma*sqrt(h) at h slots ahead (0: perfect foresight)",
    "prediction_free.sigma": "the progress line finishes the work by sigma x soft deadline",
    "quantile": "plan on the GPUs available with this probability (None: the mean forecast)",
    "averaging": "Chen et al.'s CHC: v staggered controllers averaged",
    "urgency": "share of the price by which spot taken now (on-demand bought later) looks cheaper while the plan leans on the tail",
    "refit_hours": "hours between refits of the forecaster",
    "train_hours": "hours of history each forecaster fit uses",
    "seed": "the policy's random seed (the same as --seed)",
    "pool": "members to choose from: default, quick, or a list of (policy, params) pairs",
    "algorithm": "flipflop (default: follow the leader, AdaHedge when that costs), adahedge, hedge (worst-case rate) or exp3 (bandit feedback)",
    "eta": "learning rate of hedge/exp3 (None: the theoretical one)",
    "warmup": "start from what the pool teaches on the week before the first round",
    "theta": "use spot when its price is at most theta x on-demand",
    "hysteresis_h": "hours to stay on a choice before switching back (None: 2 restart overheads)",
    "method": "auto: the exact dynamic programme where it applies, else the MILP; dp or milp to force one",
    "warm_start": "start each MILP from the best baseline schedule (a time-out is then never worse)",
    "blocks": "at most this many time blocks model the tail from the end of the window to the hard deadline",
    "floor_restarts": "restarts always kept in reserve (slack in units of the restart overhead)",
    "prior_rate": "prior spot spells per hour, before the trace's history is seen",
    "prior_hours": "weight of that prior, in hours of history",
    "z": "confidence of the upper bound on spells per hour (standard deviations)",
}


def _policy_params(name: str) -> list[tuple[str, str, str]]:
    from ..policies.registry import policy_class
    from ..params import init_parameters

    cls = policy_class(name)
    where = f"see the docstring of {cls.__module__}"
    return [(k, repr(p.default), PARAM_HELP.get(f"{name}.{k}", PARAM_HELP.get(k, where)))
            for k, p in init_parameters(cls).items()]


def _policy_summary(name: str) -> str:
    from ..policies.registry import policy_class

    cls = policy_class(name)
    doc = (cls.__doc__ or "").strip() or (__import__(cls.__module__, fromlist=["x"]).__doc__ or "").strip()
    return doc.splitlines()[0].strip() if doc else ""


def cmd_policies(args) -> int:
    from ..policies.registry import REGISTRY, policy_class

    if args.name is None:
        for name in REGISTRY:
            params = ", ".join(f"{k}={d}" for k, d, _ in _policy_params(name)) or "(no parameters)"
            print(f"{name:17s} {params}")
        print("\n`spotlab policies NAME` explains a policy's parameters; set them with --param KEY=VALUE.")
        return 0
    policy_class(args.name)
    print(f"{args.name}: {_policy_summary(args.name)}")
    rows = _policy_params(args.name)
    if not rows:
        print("  no parameters")
    width = max((len(f"{k}={d}") for k, d, _ in rows), default=0)
    for k, d, meaning in rows:
        print(f"  {f'{k}={d}':{width}s}  {meaning}")
    return 0


def cmd_data(args) -> int:
    from ..data import locate as data

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
        from . import cotune as cli

        return getattr(cli, name)(args)

    return run


def _rl(args) -> int:
    from . import rl as cli

    return {"train": cli.cmd_train, "evaluate": cli.cmd_evaluate}[args.rl_command](args)


def main(argv: list[str] | None = None) -> int:
    from ..processes import quiet_exit_stderr, stop_children, stop_on_sigterm

    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {"simulate": cmd_simulate, "forecast": cmd_forecast, "policies": cmd_policies, "data": cmd_data,
               "sweep": cmd_sweep, "heldout": cmd_heldout,
               "configs": _cotune("cmd_configs"), "cluster": _cotune("cmd_cluster"),
               "rl": _rl}[args.command]
    stop_on_sigterm()
    try:
        return handler(args)
    except SpotlabError as exc:
        print(f"spotlab: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: one line, and no process of ours left running
        stop_children()
        what = "stopped by SIGTERM" if type(exc).__name__ == "Interrupted" else "interrupted"
        print(f"spotlab {args.command}: {what}", file=sys.stderr)
        quiet_exit_stderr()
        return 143 if what.endswith("SIGTERM") else 130
    except BrokenPipeError:  # e.g. `spotlab ... --json | head -c 100`: the reader left, nothing to report
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # an internal bug: still one clear line unless --debug
        if args.debug:
            raise
        print(f"spotlab: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
