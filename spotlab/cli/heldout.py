"""`spotlab heldout`: A1/A2/A3's bars on random job shapes on a user's own markets (`experiments.heldout`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .args import finite, key_value, key_values, output_folder, positive_int, progress_option, seed, whole


def register(commands: Any) -> None:
    h = commands.add_parser("heldout", help="check A1/A2/A3's bars on random jobs on your own traces (resumable)",
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
                   help="a trace file (tidy CSV, sky_spot JSON, marketplace JSONL), PATH#ZONE for one zone of a file, "
                        "or a named market (h100, v100_prices, v100_16, a100, marketplace, calm, volatile)")
    h.add_argument("--jobs", type=whole("--jobs", 1, 10_000), default=8,
                   help="random job shapes (default 8; at most 10000, each a run of every method on every market)")
    h.add_argument("--seed", type=seed, default=0,
                   help="seed of the job shapes, the policies and a synthetic market (default 0)")
    h.add_argument("--job", type=key_value, action="append", default=[], metavar="FIELD=VALUE",
                   help="fix a field of every job shape (JobSpec: deadline_h, gamma, load, n_min, n_max, beta, "
                        "overhead_h, value_factor, miss_factor), once each")
    h.add_argument("--stride-hours", type=finite("stride", positive=True), default=12.0,
                   help="a new job every STRIDE hours (default 12)")
    h.add_argument("--skip-hours", type=finite("skip", nonneg=True),
                   help="hours of each trace before its first job (default 168: a week of history)")
    h.add_argument("--max-jobs", type=positive_int, default=40, help="jobs per market and shape (default 40)")
    h.add_argument("--w", type=positive_int, default=12, help="A1's window in slots (default 12)")
    h.add_argument("--no-full-window", action="store_true", help="skip the a1_full bar (CHC over the whole job)")
    h.add_argument("--slot-hours", type=finite("slot", positive=True), default=1.0, help="slot length (default 1 h)")
    h.add_argument("--on-demand-price", type=finite("on-demand price", positive=True),
                   help="USD per GPU-hour, for traces without an on-demand price")
    h.add_argument("--spot-share", type=finite("spot share", positive=True),
                   help="spot price = share x on-demand, for traces without a spot price")
    h.add_argument("--solver", choices=("glpk", "highs"), default="glpk",
                   help="MILP solver of the optimum and of CHC's windows")
    h.add_argument("--give-up", choices=("auto", "on", "off"), default="auto",
                   help="may the safety net stop a job not worth finishing on demand? auto (default): for jobs "
                        "with a value or a miss penalty, as the optimum may leave them unfinished")
    h.add_argument("--out", default=os.path.join("build", "heldout"),
                   help="output folder (default build/heldout): heldout_checks.csv, heldout_comparison_jobs.csv")
    h.add_argument("--json", action="store_true", help="print the checks as JSON records (otherwise a table)")
    progress_option(h)
    h.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..experiments.heldout import BARS, MARGIN_UNITS, heldout_check

    fixed = key_values(args.job, "--job")
    output_folder(args.out, "--out")
    res = heldout_check(args.markets, jobs=args.jobs, seed=args.seed, fixed=fixed,
                        stride_hours=args.stride_hours, max_jobs=args.max_jobs, w=args.w,
                        full_window=not args.no_full_window, solver=args.solver, out_dir=args.out,
                        slot_hours=args.slot_hours, od_price=args.on_demand_price, spot_share=args.spot_share,
                        progress=args.progress, give_up={"auto": None, "on": True, "off": False}[args.give_up],
                        skip_hours=args.skip_hours)
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
