"""`spotlab cotune configs` (prediction accuracy, recommendations) and `spotlab cotune cluster` (the cluster
experiment): CoTune's commands, one group. Building the parser imports nothing heavy; the handlers import the
library when they run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ..cluster.registry import SCHEDULERS
from .args import (
    finite,
    key_value,
    key_values,
    names,
    output_file,
    output_folder,
    progress_option,
    seed,
    values_by_name,
    whole,
    writing,
)

MAX_RUNS = 1_000_000  # runs to generate: 200x the default, minutes of fitting; more would only fill the memory


def _config_error(message: str) -> Exception:
    """A `ConfigError` (imported here: `space` loads pandas, which `spotlab --help` does not need)."""
    from ..errors import ConfigError

    return ConfigError(message)


def _ints(text: str) -> list[int]:
    try:
        out = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated whole numbers, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected whole numbers >= 1, got {text!r}")
    return out




def _part(text: str) -> tuple[float, float]:
    try:
        a, b = (float(t) for t in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END fractions such as 0.5:1, got {text!r}") from None
    return a, b


def register(commands: Any) -> None:
    group = commands.add_parser("cotune", help="CoTune: configuration knowledge for fine-tuning jobs (configs, cluster)",
                                description="CoTune: learn which configurations of a fine-tuning job are valid and how "
                                            "fast they run, and what that knowledge does for a cluster scheduler.")
    sub = group.add_subparsers(dest="cotune_command", required=True, parser_class=type(group))
    c = sub.add_parser("configs", help="CoTune: predict validity and throughput of fine-tuning configurations",
                       description="Train the validity classifier and throughput regressor on historical runs "
                                   "(a file in the public schema, or runs generated from the analytical model), "
                                   "report their held-out errors and learning curve, and optionally recommend a "
                                   "configuration for a partial one.")
    c.add_argument("--runs", help="CSV/Parquet of runs (columns model_name, method, gpu_model, number_gpus, "
                                  "batch_size, tokens_per_sample, is_valid, dataset_tokens_per_second)")
    c.add_argument("--n-runs", type=whole("--n-runs", 20, MAX_RUNS),
                   help="runs to generate when --runs is not given (5000; at least 20)")
    c.add_argument("--seed", type=seed, default=0, help="seed of the generated runs, the split and the models (0)")
    c.add_argument("--sizes", type=_ints, default=[100, 300, 600, 1000, 2000],
                   help="learning-curve training sizes (comma-separated, each below the training split's size)")
    c.add_argument("--repeats", type=whole("--repeats", 1), default=3, help="learning-curve repeats per size")
    c.add_argument("--recommend", action="append", default=[], type=key_value, metavar="KEY=VALUE",
                   help="a fixed parameter of the job to complete (repeat), e.g. --recommend model_name=llama2-7b")
    c.add_argument("--objective", choices=["fewest_gpus", "throughput_per_gpu", "throughput"],
                   help="with --recommend: what the recommendation optimises among predicted-valid configurations "
                        "(default throughput_per_gpu)")
    c.add_argument("--out", help="folder for learning_curve.csv and summary.json")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    progress_option(c)
    c.set_defaults(run=run_configs)

    k = sub.add_parser("cluster", help="CoTune: job completion time per scheduling policy and configuration source",
                       description="Replay a part of the Alibaba GPU trace (arrivals, GPU counts) with Philly "
                                   "runtimes as fine-tuning jobs on a heterogeneous cluster, once per scheduling "
                                   "policy and configuration source, and report mean/p95 JCT and GPU-hours wasted.")
    k.add_argument("--cluster", default="A100-80GB:4x8,L40S-48GB:8x4", help="pools GPU:NODESxGPUS_PER_NODE,...")
    k.add_argument("--part", type=_part, default=(0.5, 1.0),
                   help="fraction of the trace's observed span (default 0.5:1, the half the notebooks do not use)")
    k.add_argument("--n-jobs", type=whole("--n-jobs", 1), help="first N jobs of that part (default: all)")
    k.add_argument("--load", type=finite("load", positive=True), default=0.4,
                   help="offered load the arrivals are scaled to (GPU-time of the best configurations / capacity)")
    k.add_argument("--max-runtime-h", type=finite("max runtime", positive=True), default=48.0,
                   help="cap on Philly runtimes in hours (48)")
    k.add_argument("--policies", type=names, default=["fifo", "sia"],
                   help=f"cluster scheduling policies, comma-separated: {', '.join(SCHEDULERS)} (default fifo,sia)")
    k.add_argument("--scheduler-param", action="append", default=[], type=key_value, metavar="POLICY.KEY=VALUE",
                   help="a parameter of one of --policies, once each: e.g. --scheduler-param rl_agent.model=DIR (the "
                        "folder of `spotlab rl train --out DIR`; the rl_agent policy needs it), "
                        "--scheduler-param sia.window=32")
    k.add_argument("--sources", type=names, default=["user", "profiling", "predicted", "oracle"],
                   help="user, profiling, predicted, oracle")
    k.add_argument("--train-runs", type=whole("--train-runs", 20, MAX_RUNS),
                   help="runs generated for the predicted source to learn from (5000)")
    k.add_argument("--runs", help="train the predicted source on this runs file instead")
    k.add_argument("--seed", type=seed, default=0, help="seed of the workload, the runs and the predictors (0)")
    k.add_argument("--results", help="CSV file the runs are appended to (resumes: runs already in it are skipped)")
    k.add_argument("--json", action="store_true", help="print JSON records")
    progress_option(k)
    k.set_defaults(run=run_cluster)




def run_configs(args: argparse.Namespace) -> int:
    from ..cotune.config_models import config_split, evaluate, learning_curve
    from ..cotune.recommend import Recommender
    from ..cotune.run_history import generate_runs, load_runs
    from ..experiments.cotune_cluster import train_knowledge
    from ..progress import Progress

    recommend = key_values(args.recommend, "--recommend")
    if args.runs and args.n_runs is not None:
        raise _config_error("give either --runs (a file of runs) or --n-runs (runs to generate), not both")
    if args.objective is not None and not recommend:
        raise _config_error("--objective is what --recommend optimises; give --recommend KEY=VALUE too")
    n_runs = 5000 if args.n_runs is None else args.n_runs
    objective = args.objective or "throughput_per_gpu"
    output_folder(args.out, "--out")
    steps = 3 + bool(args.recommend)
    with Progress(total=steps, desc="configs", unit="step", enabled=args.progress) as bar:
        bar.stage("configs: runs")
        runs = load_runs(args.runs) if args.runs else generate_runs(n_runs, seed=args.seed)
        train, test = config_split(runs, seed=args.seed)
        too_big = [s for s in args.sizes if s >= len(train)]
        if too_big:
            raise _config_error(f"--sizes {','.join(map(str, too_big))}: the training split has {len(train)} runs "
                                f"(of {len(runs)}; a fifth of the configurations is held out); give sizes below "
                                f"{len(train)} or more runs (--n-runs)")
        bar.update()
        bar.stage("configs: held-out errors")
        scores = evaluate(train, test, random_state=args.seed)
        bar.update()
        bar.stage(f"configs: learning curve ({len(args.sizes)} sizes x {args.repeats} repeats)")
        curve = learning_curve(runs, sizes=args.sizes, repeats=args.repeats, seed=args.seed)
        bar.update()
        if args.recommend:
            bar.stage("configs: recommendation")
            rec = Recommender(train_knowledge(runs=runs, seed=args.seed)).recommend(recommend, objective)
            bar.update()
    mean = curve.groupby("size")[["validity_error", "throughput_error"]].mean().reset_index()
    summary: dict[str, Any] = {"runs": len(runs), "source": args.runs or f"generated (seed {args.seed})",
                               "seed": args.seed, **{k: v for k, v in scores.items()}}
    if args.recommend:
        summary["recommendation"] = {**rec.config.as_dict(), "p_valid": rec.p_valid,
                                     "predicted_tokens_per_second": rec.tokens_per_second,
                                     "objective": rec.objective}
    if args.out:
        out = Path(args.out)
        with writing(out, "--out"):
            out.mkdir(parents=True, exist_ok=True)
            curve.to_csv(out / "learning_curve.csv", index=False)
            (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    if args.json:
        print(json.dumps({**summary, "learning_curve": mean.to_dict(orient="records")}, default=float))
        return 0
    print(f"{summary['runs']} runs ({summary['source']}); held-out configurations: {scores['n_test']} runs")
    print(f"validity error   {scores['validity_error']:.1%}  (majority class {scores['validity_error_majority']:.1%})")
    print(f"throughput error {scores['throughput_error']:.1%}  (training median {scores['throughput_error_median']:.1%})")
    print("learning curve (mean over repeats):")
    for r in mean.itertuples():
        print(f"  {int(r.size):6d} runs: validity {r.validity_error:.1%}, throughput {r.throughput_error:.1%}")
    if "recommendation" in summary:
        r = summary["recommendation"]
        print(f"recommended ({r['objective']}): " + ", ".join(f"{k}={r[k]}" for k in rec.config.as_dict())
              + f"  -> P(valid) {r['p_valid']:.2f}, {r['predicted_tokens_per_second']:,.0f} tokens/s")
    return 0


def run_cluster(args: argparse.Namespace) -> int:
    from ..cluster.alibaba_philly_workload import check_part, trace_workload
    from ..cluster.state import Cluster
    from ..cotune.jobs import fine_tune_jobs, offered_load, scaled, time_scale_for_load
    from ..cotune.run_history import load_runs
    from ..experiments.cotune_cluster import Settings, compare, train_knowledge

    output_file(args.results, "--results", (".csv",))
    unknown = [p for p in args.policies if p not in SCHEDULERS]
    if unknown:
        raise _config_error(f"unknown policy {unknown}; use {', '.join(SCHEDULERS)}")
    bad = [s for s in args.sources if s not in ("user", "profiling", "predicted", "oracle")]
    if bad:
        raise _config_error(f"unknown configuration source {bad}; use user, profiling, predicted, oracle")
    if "predicted" not in args.sources and (args.runs or args.train_runs is not None):
        raise _config_error("--runs and --train-runs train the predicted source; add predicted to --sources")
    if args.runs and args.train_runs is not None:
        raise _config_error("give either --runs (a file of runs) or --train-runs (runs to generate), not both")
    train_runs = 5000 if args.train_runs is None else args.train_runs
    from ..errors import ConfigError

    scheduler_params = values_by_name(args.scheduler_param, "--scheduler-param", args.policies, "--policies",
                                      "rl_agent.model=DIR", ConfigError)
    from ..cluster.registry import make_scheduler

    for policy in args.policies:
        make_scheduler(policy, **scheduler_params.get(policy, {}))  # a bad parameter fails before the workload
    cluster = Cluster.parse(args.cluster)
    check_part(args.part)  # the inputs first: the trace takes seconds to load, and may have to be fetched
    runs = load_runs(args.runs) if args.runs and "predicted" in args.sources else None
    trace = trace_workload(part=args.part, n_jobs=args.n_jobs, seed=args.seed,
                           max_runtime_s=args.max_runtime_h * 3600.0)
    jobs = fine_tune_jobs(trace, cluster, seed=args.seed)
    factor = time_scale_for_load(jobs, cluster, args.load)
    jobs = scaled(jobs, factor)
    sources: dict[str, Any] = {}
    for s in args.sources:
        if s == "predicted":
            sources[s] = train_knowledge(train_runs, seed=args.seed, runs=runs)
        else:
            sources[s] = s
    tag = f"train_runs={train_runs} runs={Path(args.runs).resolve() if args.runs else None}"
    if scheduler_params:  # a resumed results file must not mix runs of other parameters
        tag += f" scheduler_params={json.dumps(scheduler_params, sort_keys=True)}"
    table = compare(cluster, jobs, sources, args.policies, Settings(seed=args.seed), results_csv=args.results,
                    progress=args.progress, tag=tag, scheduler_params=scheduler_params)
    table["time_scale"] = factor
    table["offered_load"] = offered_load(jobs, cluster)
    if args.json:
        print(table.to_json(orient="records"))
        return 0
    print(f"{len(jobs)} jobs (trace part {args.part[0]:g}:{args.part[1]:g}), cluster {cluster} "
          f"({cluster.gpus} GPUs), arrivals x{factor:.3g} for offered load {args.load:g}, seed {args.seed}")
    cols = ["policy", "source", "mean_jct_h", "p95_jct_h", "gpu_hours_wasted", "utilisation", "jobs_failed",
            "jct_change_vs_user"]
    print(table[[c for c in cols if c in table.columns]].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return 0
