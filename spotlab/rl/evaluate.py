"""Evaluating an agent on held-out windows against the heuristic schedulers, paired window by window.

Every scheduler (the heuristics and the agent, ``rl_agent`` with argmax choices) runs on the same windows of the
test split, which training never sees (`spotlab.rl.workload`: split by time). Per window and scheduler: mean
queueing delay and JCT (hours), mean bounded slowdown, utilisation (`spotlab.rl.reward.scores`). `summarise`
gives each metric's mean over the windows with a 95% t-interval, and the agent's change of each mean against
FCFS and against the best heuristic on that metric (agent mean / heuristic mean - 1; negative is better except
for utilisation), with a 95% paired bootstrap interval over the windows (seeded).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..errors import RLError
from .intervals import paired_change, t_interval
from .workload import Window, Workload

__all__ = ["METRICS", "AGENT", "Evaluation", "evaluate", "heuristics", "run_windows", "summarise"]

AGENT = "rl_agent"
METRICS = {"wait_h": "mean queueing delay (h)", "jct_h": "mean JCT (h)", "slowdown": "mean bounded slowdown",
           "utilisation": "utilisation"}
HIGHER_IS_BETTER = {"utilisation"}
NOT_HEURISTICS = {AGENT, "sia"}  # sia is CoTune's throughput-aware policy: every job here has one option


def heuristics() -> list[str]:
    """The registered heuristic schedulers: every registered scheduler but the agent and CoTune's sia, each class
    once (``fcfs`` and ``fifo`` name the same one)."""
    from ..cluster.registry import SCHEDULERS

    seen: set[str] = set()
    out = []
    for name, target in SCHEDULERS.items():
        if name not in NOT_HEURISTICS and target not in seen:
            seen.add(target)
            out.append(name)
    return out


def run_windows(windows: Sequence[Window], schedulers: Sequence[Any], placement: str = "best_fit",
                names: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per (window, scheduler): the metrics of `METRICS`. ``schedulers``: names or instances."""
    from ..cluster.metrics import log_scores
    from ..cluster.simulate import run_engine

    names = list(names) if names is not None else [s if isinstance(s, str) else s.name for s in schedulers]
    rows = []
    for w in windows:
        for name, sched in zip(names, schedulers):
            sc = log_scores(run_engine(w.cluster, w.jobs, scheduler=sched, placement=placement)[0])
            rows.append({"split": w.split, "window": w.index, "scheduler": name, "placement": str(placement),
                         "wait_h": sc["wait"] / 3600, "jct_h": sc["jct"] / 3600, "slowdown": sc["bsld"],
                         "utilisation": sc["utilisation"]})
    return pd.DataFrame(rows)


def summarise(table: pd.DataFrame, agent: str = AGENT, fcfs: str = "fifo", seed: int = 0) -> dict[str, Any]:
    """Per scheduler and metric: mean and 95% interval; the agent's change against ``fcfs`` and the best
    heuristic per metric (module doc). ``table``: rows of `run_windows`."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"schedulers": {}, "agent_vs_fcfs": {}, "agent_vs_best": {}}
    wide = {m: table.pivot_table(index=["split", "window"], columns="scheduler", values=m) for m in METRICS}
    for name in dict.fromkeys(table["scheduler"]):
        out["schedulers"][name] = {m: dict(zip(("mean", "low", "high"), t_interval(wide[m][name].to_numpy())))
                                   for m in METRICS}
    if agent not in out["schedulers"]:
        return out
    others = [s for s in out["schedulers"] if s != agent]
    for m in METRICS:
        a = wide[m][agent].to_numpy()
        if fcfs in others:
            c, lo, hi = paired_change(a, wide[m][fcfs].to_numpy(), rng)
            out["agent_vs_fcfs"][m] = {"scheduler": fcfs, "change": c, "low": lo, "high": hi}
        if others:
            means = {s: out["schedulers"][s][m]["mean"] for s in others}
            best = (max if m in HIGHER_IS_BETTER else min)(means, key=means.get)
            c, lo, hi = paired_change(a, wide[m][best].to_numpy(), rng)
            out["agent_vs_best"][m] = {"scheduler": best, "change": c, "low": lo, "high": hi}
    return out


@dataclass(frozen=True)
class Evaluation:
    """Per-window rows (`run_windows`) and their summary (`summarise`)."""

    table: pd.DataFrame
    summary: dict[str, Any]
    workload: Workload


def evaluate(model: str | Path, *, preset: str | None = None, trace: str | None = None, n_windows: int = 30,
             schedulers: Sequence[str] | None = None, placement: str | None = None, split: str = "test",
             windows: dict | None = None, seed: int = 0) -> Evaluation:
    """The agent in ``model`` and the heuristics on the first ``n_windows`` windows of ``split`` of the agent's
    workload (``preset`` / ``trace``: another cluster or trace, for transfer)."""
    from .scheduler import RLAgent
    from .train import load_settings

    settings, _ = load_settings(model)
    if split not in ("validation", "test"):
        raise RLError(f"evaluate on held-out windows: split must be 'validation' or 'test', got {split!r}")
    if isinstance(n_windows, bool) or not isinstance(n_windows, int) or n_windows < 1:
        raise RLError(f"windows must be a whole number >= 1, got {n_windows!r}")
    from dataclasses import replace

    from .workload import windows as cut

    workload = replace(settings.workload, **{k: v for k, v in (("preset", preset), ("trace", trace)) if v})
    wins = (windows or cut(workload))[split]
    if len(wins) < n_windows:
        raise RLError(f"the {split} split of {workload.trace} holds {len(wins)} window(s) of "
                           f"{workload.size} jobs, fewer than the {n_windows} asked for")
    names = list(schedulers) if schedulers is not None else heuristics()
    agent = RLAgent(str(model))
    table = run_windows(wins[:n_windows], [*names, agent], placement or settings.placement, [*names, AGENT])
    return Evaluation(table, summarise(table, seed=seed), workload)
