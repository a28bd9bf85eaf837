"""`spotlab simulate`: replay a registered policy on a trace (each window of it, or jobs one after another) through
the same front door as the notebooks (`market.load.load_market`, `market.windows.cut_windows`,
`policies.run.run_policy`), so a number printed here is the number the Python path computes."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ..errors import SpotlabError
from .args import finite, jsonable, key_value, key_values, output_file, positive_int, progress_option, writing

MAX_PRICE = 1e9  # USD per GPU-hour, as `spotlab.market.market.MAX_PRICE` (not imported: it loads numpy)


def register(commands: Any) -> None:
    s = commands.add_parser("simulate", help="replay a policy on a trace (or each window of it) and report the means",
                            description="Replay a scheduling policy on a market trace with the spotlab simulator.")
    s.add_argument("--trace", required=True, action="append",
                   help="trace file: tidy market CSV (.csv/.csv.gz), sky_spot JSON or marketplace JSONL (the format "
                        "is read from the file); repeated: one zone per trace, the job across them (it starts in "
                        "the first)")
    s.add_argument("--windows", help="CSV of windows (window,start_tick,end_tick): one run per row")
    s.add_argument("--stride-hours", type=finite("stride", positive=True),
                   help="cut the trace into jobs one after another: a window of the job's hard-deadline horizon "
                        "starting every STRIDE hours (the rounds of --policy select; default for select: back to back)")
    s.add_argument("--skip-hours", type=finite("skip", nonneg=True),
                   help="with --stride-hours: hours of the trace before the first job (default 168: a week of "
                        "history for every job)")
    s.add_argument("--zone", help="zone of a tidy CSV or marketplace file holding several (a JSON trace has one)")
    s.add_argument("--zones", help="zones of one tidy CSV or marketplace file to run the job across (comma list in "
                                   "the order tried, the job starting in the first; or `all`)")
    s.add_argument("--checkpoint-gb", type=finite("--checkpoint-gb", nonneg=True, maximum=1e6), default=0.0,
                   help="what a move between zones carries, in GB (egress is paid on it across regions; default 0)")
    s.add_argument("--zone-rule", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="a rule of moves beyond the rule set's: transfer_time=true (a move waits for the checkpoint), "
                        "bandwidth_gbps=8.2, visibility=probe|free, probe_seconds=60 (docs/zones.md)")
    s.add_argument("--egress-table", help="CSV from_region,to_region,usd_per_gb for moves across regions (default: "
                                          "USD 0.02/GB between regions, free inside one; docs/zones.md)")
    s.add_argument("--policy", required=True, help="policy name (see `spotlab policies`)")
    s.add_argument("--param", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="policy parameter, once each; `spotlab policies NAME` lists them with defaults")
    s.add_argument("--work-hours", required=True, type=finite("--work-hours", positive=True),
                   help="work, in hours of one GPU")
    s.add_argument("--deadline-hours", required=True, type=finite("--deadline-hours", positive=True),
                   help="soft deadline d (hours from the start of each run)")
    s.add_argument("--hard-deadline-hours", type=finite("--hard-deadline-hours", positive=True),
                   help="hard deadline gamma*d (default: the soft deadline)")
    s.add_argument("--restart-overhead-hours", required=True, type=finite("--restart-overhead-hours", nonneg=True),
                   help="reconfiguration overhead delta (hours of zero progress, billed)")
    s.add_argument("--on-demand-price", type=finite("on-demand price", positive=True, maximum=MAX_PRICE),
                   help="USD per GPU-hour, replaces the trace's")
    s.add_argument("--spot-price", type=finite("spot price", nonneg=True, maximum=MAX_PRICE),
                   help="USD per GPU-hour, replaces the trace's")
    s.add_argument("--spot-share", type=finite("spot share", positive=True),
                   help="spot price = SHARE x on-demand, for a trace without spot prices")
    s.add_argument("--gpus", type=positive_int, help="GPUs the job runs on (N_min = N_max = N; default 1); "
                                                     "not together with --gpus-min/--gpus-max")
    s.add_argument("--gpus-min", type=positive_int, help="N_min: fewest GPUs the job can run on (default 1)")
    s.add_argument("--gpus-max", type=positive_int, help="N_max: most GPUs the job can use (default 1)")
    s.add_argument("--throughput-alpha", type=finite("--throughput-alpha"), default=1.0,
                   help="throughput H(n) = alpha*n + beta in one-GPU-hours of work per hour (default 1)")
    s.add_argument("--throughput-beta", type=finite("--throughput-beta"), default=0.0,
                   help="constant term beta of H(n) (default 0); H(n) must be > 0 for every allowed n")
    s.add_argument("--value", type=finite("--value"), default=0.0,
                   help="value V0 of finishing by the soft deadline, USD (default 0: utility = -cost)")
    s.add_argument("--miss-penalty", type=finite("--miss-penalty", nonneg=True), default=0.0,
                   help="USD lost when the job is not done by the hard deadline (default 0)")
    s.add_argument("--slot-hours", type=finite("slot length", positive=True), help="resample to this slot length")
    s.add_argument("--solver", choices=["glpk", "highs"], help="solver for optimisation-based policies")
    s.add_argument("--seed", type=int, help="the one seed of every random element: the simulation's and the "
                                             "policy's own (`--param seed=S` is the same seed); default 0, recorded "
                                             "in the output")
    s.add_argument("--json-convention", choices=["preempted", "available"],
                   help="sky_spot JSON traces only: their values are 1 = preempted (Can't Be Late; the default) or "
                        "counts of available instances")
    s.add_argument("--semantics", choices=["auto", "cant-be-late", "spotlab", "skynomad", "leaderboard"],
                   default="auto",
                   help="auto: Can't Be Late rules for sky_spot JSON traces, spotlab's for the other formats")
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
    progress_option(s)
    s.set_defaults(run=run)


def _one_seed(args: argparse.Namespace, params: dict) -> int:
    """`--seed S` and `--param seed=S` are the same seed: it seeds the simulation and the policy."""
    given = params.pop("seed", None)
    if given is not None:
        try:
            given = int(given)
        except ValueError:
            raise SpotlabError(f"--param seed={given!r} is not a whole number") from None
        if args.seed is not None and args.seed != given:
            raise SpotlabError(f"--seed {args.seed} and --param seed={given} disagree; give one seed")
    seed = args.seed if args.seed is not None else (given if given is not None else 0)
    if seed < 0:
        raise SpotlabError(f"--seed must be >= 0, got {seed}")
    return seed


class _Tracked:
    """A policy seen through a progress bar: its preparation (`reset`: the optimum's solves, the pool of
    `select`) as one stage, then one tick per simulated slot. Everything else is the policy's own."""

    def __init__(self, policy: Any, bar: Any, block: tuple[int, int] = (0, 1)) -> None:
        self._policy, self._bar, self._block = policy, bar, block

    def __getattr__(self, name: str) -> Any:
        return getattr(self._policy, name)

    def reset(self, ctx: Any) -> None:
        name = getattr(self._policy, "name", "policy")
        i, n = self._block
        self._horizon = ctx.horizon
        if i == 0:
            self._bar.stage(f"{name}: preparing {ctx.episodes.n} window(s)")
        self._policy.reset(ctx)
        if i == 0:
            self._bar.bar.reset(total=ctx.horizon * n)
            self._bar.stage(f"{name}: slots" + (f" of {n} blocks of windows" if n > 1 else ""))

    def act(self, obs: Any) -> Any:
        self._bar.set(self._block[0] * self._horizon + obs.t)
        return self._policy.act(obs)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ..jobs.job import make_job
    from ..market.egress import read_egress_table
    from ..market.load import load_market
    from ..market.zones import load_zones
    from ..market.windows import HISTORY_HOURS, cut_windows
    from ..params import init_parameters
    from ..policies.registry import make_policy, policy_class
    from ..policies.run import run_policy
    from ..policies.semantics import semantics_for
    from ..progress import Progress

    started = time.perf_counter()
    cls = policy_class(args.policy)  # an unknown name fails before any data is read
    if args.gpus is not None and (args.gpus_min is not None or args.gpus_max is not None):
        raise SpotlabError("give either --gpus N (N_min = N_max = N) or --gpus-min/--gpus-max, not both")
    params: dict[str, Any] = key_values(args.param, "--param")
    seed = _one_seed(args, params)
    accepted = init_parameters(cls)
    if "seed" in accepted:
        params["seed"] = seed
    if args.solver is not None:
        if "solver" not in accepted:
            raise SpotlabError(f"--solver applies to policies that solve optimisation problems (chc, optimal, "
                               f"optimal_netted); {args.policy} solves none")
        if params.get("solver", args.solver) != args.solver:
            raise SpotlabError(f"--solver {args.solver} and --param solver={params['solver']} disagree; give one")
        params["solver"] = args.solver
    if not getattr(cls, "online", False) and (args.safety_net is not None or args.give_up):
        raise SpotlabError(f"--safety-net and --give-up guard online policies; {args.policy} is a hindsight plan "
                           "(its must_finish parameter says whether it may leave a job unfinished)")
    if args.no_timings and not args.json:
        raise SpotlabError("--no-timings leaves the timings out of the --json output; give --json too")
    policy = make_policy(args.policy, params)  # bad parameters fail before any data is read, too
    output_file(args.per_run, "--per-run", (".csv",))
    output_file(args.records, "--records", (".csv",))
    across = len(args.trace) > 1 or args.zones is not None
    if args.zone is not None and across:
        raise SpotlabError("--zone picks the one zone of a run in one zone; across zones give --zones (one file) "
                           "or one --trace per zone")
    if args.zones is not None and len(args.trace) > 1:
        raise SpotlabError("--zones picks zones of one file; with several --trace each file is a zone")
    if not across and (args.egress_table is not None or args.checkpoint_gb or args.zone_rule):
        raise SpotlabError("--checkpoint-gb, --egress-table and --zone-rule price moves between zones; give several "
                           "--trace (one per zone) or --zones")
    zone_rules = key_values(args.zone_rule, "--zone-rule")
    egress = read_egress_table(args.egress_table) if args.egress_table is not None else None
    job = make_job(args.work_hours, args.deadline_hours, args.hard_deadline_hours, args.restart_overhead_hours,
                   args.gpus, args.gpus_min, args.gpus_max, args.throughput_alpha, args.throughput_beta,
                   args.value, args.miss_penalty, checkpoint_gb=args.checkpoint_gb)
    stride = args.stride_hours
    if stride is None and args.policy == "select" and not args.windows:
        stride = job.hard_deadline_h  # rounds are jobs one after another
    if stride is not None and args.windows:
        raise SpotlabError("give either --windows or --stride-hours, not both")
    if args.skip_hours is not None and stride is None:
        raise SpotlabError("--skip-hours goes with --stride-hours (jobs one after another)")
    skip = None if stride is None else (args.skip_hours if args.skip_hours is not None else HISTORY_HOURS)
    prices = dict(slot_hours=args.slot_hours, convention=args.json_convention, spot_price=args.spot_price,
                  od_price=args.on_demand_price, spot_share=args.spot_share)
    if across:
        zones = None if args.zones is None else args.zones if args.zones == "all" else \
            [z.strip() for z in args.zones.split(",") if z.strip()]
        market = load_zones(args.trace, zones=zones, **prices)
        if egress is not None:
            egress.check_pairs(market.regions)
    else:
        market = load_market(args.trace[0], zone=args.zone, **prices)
    history = HISTORY_HOURS if getattr(cls, "reads_history", True) else 0.0  # no week cut for a rule that ignores it
    episodes = cut_windows(market, windows=args.windows, stride_hours=stride, horizon_hours=job.hard_deadline_h,
                           skip_hours=skip, history_hours=history)
    semantics = semantics_for(market, args.semantics, args.billing, args.safety_net, args.give_up, egress,
                              zone_rules)
    loaded_s = time.perf_counter()
    with Progress(desc=args.policy, unit="slot", enabled=args.progress) as bar:
        block = [(0, 1)]
        result = run_policy(args.policy, params, episodes, job, semantics, seed=seed,
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
        "trace": str(args.trace[0]) if not across else [str(x) for x in args.trace],
        "format": (market.zones[0] if across else market).meta.get("format"),
        "zone": args.zone if not across else list(market.names),
        "windows": str(args.windows) if args.windows else None,
        "stride_hours": stride,
        "skip_hours": skip,
        "slot_hours": market.slot_hours,
        "semantics": {"billing": semantics.billing, "safety_net": semantics.safety_net,
                      "give_up": semantics.give_up, **({"rules": semantics.rules, "egress": semantics.egress.source,
                                                         "regions": list(market.regions),
                                                         **dict(semantics.overrides)}
                                                        if across else {})},
        "job": {"work_hours": args.work_hours, "deadline_hours": job.deadline_h,
                "hard_deadline_hours": job.hard_deadline_h, "restart_overhead_hours": job.overhead_h,
                "gpus_min": job.n_min, "gpus_max": job.n_max, "throughput_alpha": args.throughput_alpha,
                "throughput_beta": args.throughput_beta, "value": job.value, "miss_penalty": job.miss_penalty,
                **({"checkpoint_gb": job.checkpoint_gb} if across else {})},
    })
    if args.per_run:
        with writing(args.per_run, "--per-run"):
            result.summary().to_csv(args.per_run, index=False)
    if args.records:
        with writing(args.records, "--records"):
            result.records().to_csv(args.records, index=False)
    timings.update(load_s=round(loaded_s - started, 3), simulate_s=round(simulated_s - loaded_s, 3),
                   total_s=round(time.perf_counter() - started, 3))
    if not args.no_timings:
        out["timings"] = timings
    if args.json:
        print(json.dumps(out, allow_nan=False, default=jsonable))
    else:
        print(f"{out['policy']}: {out['runs']} run(s), mean cost {out['mean_cost']:.2f}, mean utility "
              f"{out['mean_utility']:.2f}, deadline met {100 * out['deadline_met_fraction']:.1f}%")
    return 0
