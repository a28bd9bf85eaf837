"""The cluster experiment of CoTune: job completion time per scheduling policy and configuration source.

`compare` replays one trace workload under every (policy, source) pair on the same cluster and reports
each run's summary (mean and p95 job completion time, GPU-hours wasted, ...) and the change of mean JCT
against the user's guesses under the same policy — the seed's headline numbers (-78 % under FIFO, -70 % under
Sia with predicted knowledge). `sensitivity` degrades the knowledge on purpose (`NoisyKnowledge`) to show
how much prediction error the scheduling gains survive. Results are appended to a CSV as each run finishes
and runs already in it are skipped, so an interrupted experiment resumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..cluster.simulate import simulate
from ..cluster.state import Cluster
from ..cotune.jobs import FineTuneJob, sim_jobs
from ..cotune.knowledge import Knowledge, NoisyKnowledge, PredictedKnowledge
from ..cotune.perf import DEFAULT, PerfModel
from ..errors import ClusterError
from ..progress import tqdm_bar
from .cells import Cell, Table
from .cells import run as run_cells

__all__ = ["train_knowledge", "compare", "sensitivity", "Settings"]


@dataclass(frozen=True)
class Settings:
    """What every run of one experiment shares (recorded with the results)."""

    seed: int = 0
    fail_after_s: float = 120.0
    profile_s: float = 60.0
    objective: str = "throughput_per_gpu"
    perf: PerfModel = field(default=DEFAULT)

    def record(self) -> dict[str, Any]:
        return {"seed": self.seed, "fail_after_s": self.fail_after_s, "profile_s": self.profile_s,
                "objective": self.objective}


def train_knowledge(n_runs: int = 5000, seed: int = 0, runs: pd.DataFrame | None = None,
                    perf: PerfModel = DEFAULT) -> PredictedKnowledge:
    """Predicted configuration knowledge: the validity classifier and throughput regressor trained on
    historical runs (`runs`, or `n_runs` generated with `seed`)."""
    from ..cotune.config_models import fit_predictors
    from ..cotune.run_history import generate_runs

    data = runs if runs is not None else generate_runs(n_runs, seed=seed, perf=perf)
    clf, reg = fit_predictors(data, random_state=seed)
    return PredictedKnowledge(clf, reg, name=f"predicted ({len(data)} runs)")


def _runs(cluster: Cluster, jobs: Sequence[FineTuneJob], policies: Sequence[str], source: str | Knowledge,
          s: Settings) -> dict[str, dict[str, Any]]:
    """Summary per policy; the simulator's jobs (the source's decisions, the costly part) are built once."""
    sj = sim_jobs(jobs, cluster, source, seed=s.seed, perf=s.perf, profile_s=s.profile_s, objective=s.objective)
    return {p: simulate(cluster, sj, scheduler=p, fail_after_s=s.fail_after_s).summary() for p in policies}


def _fingerprint(cluster: Cluster, jobs: Sequence[FineTuneJob], settings: Settings, tag: str) -> str:
    """Identifies what a stored row was computed from, so a resumed run never mixes in other set-ups."""
    import hashlib

    h = hashlib.sha256(f"{cluster}|{tag}|{settings.record()}|{settings.perf}".encode())
    for j in jobs:
        h.update(f"{j.job_id},{j.arrival_s:.6f},{j.work:.6f},{sorted(j.spec.items())};".encode())
    return h.hexdigest()[:16]


def compare(cluster: Cluster, jobs: Sequence[FineTuneJob], sources: Mapping[str, str | Knowledge],
            policies: Sequence[str] = ("fifo", "sia"), settings: Settings = Settings(),
            results_csv: str | Path | None = None, progress: bool | None = True, tag: str = "",
            scheduler_params: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (policy, source): the run's summary plus `jct_change_vs_user` (relative change of the mean
    JCT against the `user` source under the same policy, if it is among the sources). `scheduler_params`: a
    policy's parameters by its name (e.g. ``{"rl_agent": {"model": "DIR"}}``); `progress` None: a bar when
    stderr is a terminal.

    With `results_csv`, each run is appended as it finishes and runs already there for the same cluster, jobs,
    settings and `tag` (name anything else that changes a source or a policy, e.g. its training data or its
    parameters) are reused."""
    from ..cluster.registry import make_scheduler

    scheduler_params = {p: dict(v) for p, v in (scheduler_params or {}).items()}
    for p in scheduler_params:
        if p not in policies:
            raise ClusterError(f"parameters for scheduler {p!r}, which is not among the policies ({', '.join(policies)})")
    for p in policies:
        make_scheduler(p, **scheduler_params.get(p, {}))  # a bad name or parameter fails before any run
    fp = _fingerprint(cluster, jobs, settings, tag)
    # one cell per (source, policy); a source's simulator jobs (its decisions, the costly part) are built once
    cells = [Cell("cluster runs", {"fingerprint": fp, "policy": p, "source": name},
                  {"fingerprint": fp, "policy": p, "source": name}, settings.seed) for name in sources for p in policies]
    built: dict[str, Any] = {}

    def run_one(cell: Cell) -> pd.DataFrame:
        name, p = cell.labels["source"], cell.labels["policy"]
        if name not in built:
            built.clear()
            built[name] = sim_jobs(jobs, cluster, sources[name], seed=settings.seed, perf=settings.perf,
                                   profile_s=settings.profile_s, objective=settings.objective)
        summary = simulate(cluster, built[name], scheduler=p, fail_after_s=settings.fail_after_s,
                           **scheduler_params.get(p, {})).summary()
        return pd.DataFrame([{"fingerprint": fp, "policy": p, "source": name, **settings.record(), "jobs": len(jobs),
                              **summary}])

    table = None if results_csv is None else Table(Path(results_csv))
    rows = [r for part in run_cells(cells, run_one, table, progress=progress) for r in part.to_dict(orient="records")]
    table = pd.DataFrame(rows)
    table = table[(table["fingerprint"].astype(str) == fp) & table["policy"].isin(policies)
                  & table["source"].isin(list(sources))]
    table = table.sort_values(["policy", "source"], key=lambda c: c.map(
        {**{p: i for i, p in enumerate(policies)}, **{n: i for i, n in enumerate(sources)}})).reset_index(drop=True)
    base = table[table["source"] == "user"].set_index("policy")["mean_jct_h"]
    table["jct_change_vs_user"] = [r.mean_jct_h / base[r.policy] - 1.0 if r.policy in base.index else np.nan
                                   for r in table.itertuples()]
    return table


def sensitivity(cluster: Cluster, jobs: Sequence[FineTuneJob], sigmas: Sequence[float] = (0.0, 0.1, 0.2, 0.4),
                flips: Sequence[float] = (0.0, 0.05, 0.1, 0.2), policies: Sequence[str] = ("fifo", "sia"),
                settings: Settings = Settings(), progress: bool = True) -> pd.DataFrame:
    """Mean/p95 JCT and waste when the knowledge has a given throughput error (log-normal sigma) and a given
    rate of wrong validity answers; one row per (policy, sigma, flip)."""
    rows = []
    grid = [(sg, fl) for sg in sigmas for fl in flips]
    for sg, fl in tqdm_bar(grid, desc="sensitivity", enabled=bool(progress)):
        k = NoisyKnowledge(sigma=float(sg), flip=float(fl), seed=settings.seed, perf=settings.perf)
        for p, summary in _runs(cluster, jobs, policies, k, settings).items():
            rows.append({"policy": p, "sigma": sg, "flip": fl, **settings.record(), **summary})
    return pd.DataFrame(rows)
