"""`spotlab rl train` and `spotlab rl evaluate`: RLTune's learning scheduler from the command line, one group.
Building the parser imports nothing heavy (every `spotlab` call builds it); the handlers import the library
(torch among it) only when they run."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from .args import finite, names, output_folder, positive_int, progress_option, seed

TRAIN_DEFAULTS = {"load": 1.0, "window_size": 256, "slots": 128}


def register(commands: Any) -> None:
    rl = commands.add_parser("rl", help="RLTune: train and evaluate the learning job scheduler on a cluster preset",
                        description="A MaskablePPO agent that picks which queued job starts next on the cluster "
                                    "engine (spotlab.rl), trained on the earliest windows of a job trace and "
                                    "evaluated on later, held-out ones against the heuristic schedulers.")
    rsub = rl.add_subparsers(dest="rl_command", required=True, parser_class=type(rl))
    t = rsub.add_parser("train", help="train an agent (resumes from OUT's checkpoint when it holds one)",
                        description="Train the agent on the training windows of TRACE on cluster PRESET and save it "
                                    "in OUT (model.zip, model.json with the settings, curve.csv). Running the same "
                                    "command again continues the training from OUT's last checkpoint.")
    _workload_options(t)
    t.add_argument("--out", required=True, help="folder for the agent (model.zip, model.json, curve.csv)")
    t.add_argument("--minutes", type=finite("minutes", positive=True),
                   help="training time of this call (stops at the first rollout past it; default 5 when "
                        "--timesteps is not given)")
    t.add_argument("--timesteps", type=positive_int,
                   help="environment steps in all (the reproducible budget: same seed, same weights)")
    t.add_argument("--seed", type=seed, default=0, help="seed of the training run (0)")
    t.add_argument("--workload-seed", type=seed, default=0,
                   help="seed of the trace's pool assignment (0); keep it when comparing training seeds")
    t.add_argument("--slots", type=positive_int, default=TRAIN_DEFAULTS["slots"],
                   help="queued jobs the agent sees and chooses among (128)")
    t.add_argument("--score", choices=["bsld", "wait", "jct", "utilisation"], default="bsld",
                   help="job score of the reward (default: bounded slowdown)")
    t.add_argument("--baseline", default="fifo", help="heuristic scheduler the reward compares with (fifo)")
    t.add_argument("--placement", default="best_fit", help="placement of started jobs (best_fit)")
    t.add_argument("--backfill", action="store_true",
                   help="a job the agent waits for holds an EASY reservation; the others backfill around it")
    t.add_argument("--imitation", choices=["fcfs", "first_fit", "smallest"],
                   help="warm start: first imitate this rule on the training windows")
    progress_option(t)
    t.set_defaults(run=run_train)
    e = rsub.add_parser("evaluate", help="agent vs heuristics on held-out windows (95%% intervals)",
                        description="Run the agent (argmax choices) and every heuristic scheduler on the first N "
                                    "test windows of TRACE on PRESET (held out from training: later in time) and "
                                    "report per scheduler the mean queueing delay, JCT, bounded slowdown and "
                                    "utilisation with 95% intervals over the windows, and the agent's change "
                                    "against FCFS and against the best heuristic.")
    e.add_argument("--preset", required=True, help="cluster preset (philly, helios, alibaba, ...)")
    e.add_argument("--trace", required=True, help="job trace name or file")
    e.add_argument("--model", required=True, help="folder written by `spotlab rl train --out`")
    e.add_argument("--windows", type=positive_int, default=30, help="held-out windows to evaluate on (30)")
    e.add_argument("--split", choices=["test", "validation"], default="test", help="held-out split (test)")
    e.add_argument("--schedulers", type=names, help="comma-separated heuristics (default: every registered one)")
    e.add_argument("--placement", help="placement (default: the agent's training placement)")
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.set_defaults(run=run_evaluate)


def _workload_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", required=True, help="cluster preset (philly, helios, alibaba, alibaba-2023-nodes)")
    p.add_argument("--trace", required=True, help="job trace name (philly-gpw, helios-gpw, philly-pollux, "
                                                  "microsoft-itp-2021, ...) or file")
    p.add_argument("--load", type=finite("load", positive=True), default=TRAIN_DEFAULTS["load"],
                   help="offered load the trace's arrivals are scaled to (1.0)")
    p.add_argument("--multi-gpu-share", type=finite("multi-GPU share", nonneg=True, at_most=1.0),
                   help="share of multi-GPU jobs (default: the trace's own)")
    p.add_argument("--window-size", type=positive_int, default=TRAIN_DEFAULTS["window_size"],
                   help="jobs per episode (256)")
    p.add_argument("--drop-unplaceable", action="store_true",
                   help="leave out jobs no pool of the preset can hold (default: an error)")
    p.add_argument("--split-fractions", type=_fractions, default=(0.6, 0.2, 0.2),
                   help="shares of the trace, in time order, for training, validation and test (0.6,0.2,0.2)")


def _fractions(text: str) -> tuple[float, float, float]:
    try:
        parts = tuple(float(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected three shares such as 0.6,0.2,0.2, got {text!r}") from None
    if len(parts) != 3 or min(parts) <= 0 or abs(sum(parts) - 1) > 1e-9:
        raise argparse.ArgumentTypeError(f"expected three shares > 0 that sum to 1, got {text!r}")
    return parts


def _check_preset(name: str) -> None:
    from ..cluster.presets import PRESETS
    from ..errors import JobTableError

    if name not in PRESETS:
        raise JobTableError(f"unknown cluster preset {name!r}; known: {', '.join(PRESETS)}")


def run_train(args: argparse.Namespace) -> int:
    from ..rl.train import TrainSettings, train
    from ..rl.workload import Workload

    _check_preset(args.preset)
    output_folder(args.out, "--out")
    workload = Workload(preset=args.preset, trace=args.trace, load=args.load, multi_gpu_share=args.multi_gpu_share,
                        size=args.window_size, seed=args.workload_seed, drop_unplaceable=args.drop_unplaceable,
                        fractions=args.split_fractions)
    settings = TrainSettings(workload=workload, slots=args.slots, score=args.score, baseline=args.baseline,
                             placement=args.placement, seed=args.seed, imitation=args.imitation,
                             backfill=args.backfill)
    _check_names(args.baseline, args.placement)
    minutes = args.minutes if args.minutes is not None or args.timesteps is not None else 5.0
    result = train(settings, args.out, timesteps=args.timesteps, minutes=minutes, progress=_progress(args))
    print(json.dumps({"out": str(result.out), "rollouts": result.rollouts, "timesteps": result.timesteps,
                      "episodes": result.episodes, "seconds": result.seconds, "settings": settings.to_dict()}))
    return 0


def _check_names(scheduler: str | None, placement: str | None) -> None:
    """Unknown scheduler or placement names fail before any work."""
    from ..cluster.registry import PLACEMENTS, SCHEDULERS
    from ..errors import RLError

    if scheduler is not None and scheduler not in SCHEDULERS:
        raise RLError(f"unknown scheduler {scheduler!r}; known: {', '.join(SCHEDULERS)}")
    if placement is not None and placement not in PLACEMENTS:
        raise RLError(f"unknown placement {placement!r}; known: {', '.join(PLACEMENTS)}")


def _progress(args: argparse.Namespace) -> bool:
    import sys

    return sys.stderr.isatty() if args.progress is None else bool(args.progress)


def run_evaluate(args: argparse.Namespace) -> int:
    from ..rl.evaluate import METRICS, evaluate
    from ..rl.train import load_settings

    load_settings(args.model)  # a missing model folder fails before any data is read
    _check_preset(args.preset)
    for name in args.schedulers or ():
        _check_names(name, None)
    _check_names(None, args.placement)
    ev = evaluate(args.model, preset=args.preset, trace=args.trace, n_windows=args.windows, schedulers=args.schedulers,
                  placement=args.placement, split=args.split)
    out = {"model": str(args.model), "preset": args.preset, "trace": str(args.trace), "split": args.split,
           "windows": args.windows, "workload": ev.workload.to_dict(), **ev.summary}
    if args.json:
        print(json.dumps(_finite_json(out), allow_nan=False))
        return 0
    print(f"{args.windows} held-out {args.split} windows of {ev.workload.size} jobs, {args.trace} on {args.preset}"
          " (mean [95% interval])")
    print(f"{'scheduler':16s}" + "".join(f"{m:>28s}" for m in METRICS))
    for name, row in ev.summary["schedulers"].items():
        print(f"{name:16s}" + "".join(f"{_fmt(row[m]):>28s}" for m in METRICS))
    for key, label in (("agent_vs_fcfs", "agent vs FCFS"), ("agent_vs_best", "agent vs best heuristic")):
        parts = [f"{m} {v['change']:+.1%} [{v['low']:+.1%}, {v['high']:+.1%}] ({v['scheduler']})"
                 for m, v in ev.summary[key].items()]
        print(f"{label}: " + "; ".join(parts))
    return 0


def _fmt(v: dict) -> str:
    return f"{v['mean']:.3g} [{v['low']:.3g}, {v['high']:.3g}]"


def _finite_json(x: Any) -> Any:
    """NaN (an interval over one window) as null: strict JSON."""
    if isinstance(x, dict):
        return {k: _finite_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite_json(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
