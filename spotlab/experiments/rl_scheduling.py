"""RLTune's learning scheduler against the heuristics: the library side of notebook 10.

**Workloads.** `PRESET_WORKLOADS` pairs each cluster preset with a job trace, an offered load and a window size
(`spotlab.rl.workload.Workload`); windows are split by time, so the test windows come after every training
window. Each preset needs at least 30 test windows: Philly runs philly-pollux (82k jobs); Helios runs its own
trace (helios-gpw, 10.8k jobs) in windows of 128 jobs with 40% of the time held out; the Alibaba preset runs the
Microsoft ITP 2021 trace, because the Alibaba 2020 job table is not available here and the 2023 pods are 99%
one-GPU (no placement to decide). Jobs no pool can hold are left out and counted.

**Cells** (`spotlab.experiments.cells`: rows appended as cells finish, an interrupted run resumes):

- `train_agents`: one cell per (preset, seed) trains an agent (`spotlab.rl.train`, resumable itself) into
  ``agents_dir/<preset>-s<seed>-<hash of its settings>`` and returns its training curve;
- `evaluate_windows`: one cell per (workload, placement, scheduler or agent) runs the first ``n_windows`` test
  windows; the agents' rows say which preset they were trained on (``trained_on``: transfer when it is not
  the preset evaluated).

**Summaries.** `paired_summary` (per preset, placement and scheduler: each metric's mean with a 95% interval over
the windows), `changes` (the agent's change of each mean against FCFS and against the best heuristic of that
preset, paired over windows, with 95% bootstrap intervals), `seed_claims` (the seed's three claims, "up to":
the largest change over the presets, against FCFS as the seed measures and against the best heuristic), and
`fragmentation_trace` (a run's fragmentation, busy GPUs and queue over time).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..cluster.schedulers.base import Scheduler
from ..rl.evaluate import AGENT, METRICS, heuristics, run_windows
from ..rl.train import TrainSettings
from ..rl.workload import Workload
from .cells import Cell, Table, run
from .outputs import FIGURE, declare
from .published import RLTUNE

__all__ = ["OUTPUTS", "PRESET_WORKLOADS", "RLTUNE", "agent_dir", "changes", "evaluate_windows",
           "fragmentation_trace", "paired_summary", "seed_claims", "test_windows", "train_agents", "workloads_for"]

OUTPUTS = declare("10", setup="json", agents="csv", windows="csv", training_curves=FIGURE, paired=FIGURE,
                  changes=FIGURE, placement_ablation=FIGURE, fragmentation=FIGURE, transfer=FIGURE,
                  seed_claims=("csv", "json"))

PRESET_WORKLOADS: Mapping[str, Workload] = {
    "philly": Workload("philly", "philly-pollux", load=1.5, size=256, drop_unplaceable=True),
    "helios": Workload("helios", "helios-gpw", load=1.0, size=128, drop_unplaceable=True, fractions=(0.5, 0.1, 0.4)),
    "alibaba": Workload("alibaba", "microsoft-itp-2021", load=1.0, size=256, drop_unplaceable=True),
}
# the seed's claims (experiments.published.RLTUNE) by our metric names
CLAIM_METRICS = {"utilisation": "utilisation_change", "wait_h": "queueing_delay_change", "jct_h": "jct_change"}


def _settings_key(settings: TrainSettings, budget: Mapping[str, Any]) -> str:
    blob = json.dumps({"settings": settings.to_dict(), **budget}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:10]


def agent_dir(root: str | Path, settings: TrainSettings, timesteps: int | None, minutes: float | None) -> Path:
    """Where the agent of these settings and budget lives: one folder per distinct agent, so a rerun resumes it
    and two experiments asking for the same agent share it."""
    key = _settings_key(settings, {"timesteps": timesteps, "minutes": minutes})
    return Path(root) / f"{settings.workload.preset}-s{settings.seed}-{key}"


def train_agents(settings: Sequence[TrainSettings], *, agents_dir: str | Path, table: str | Path,
                 timesteps: int | None, minutes: float | None, n_jobs: int = 1,
                 progress: bool | None = None) -> pd.DataFrame:
    """Train every agent of ``settings`` (one cell each: labels preset, seed); the rows are their training
    curves (one per finished episode) with the agent's folder, rollouts, timesteps and seconds."""
    cells = [Cell("rl_train", {"settings": s.to_dict(), "timesteps": timesteps, "minutes": minutes},
                  labels={"preset": s.workload.preset}, seed=s.seed,
                  inputs=(s, str(agent_dir(agents_dir, s, timesteps, minutes)))) for s in settings]

    def compute(cell: Cell) -> pd.DataFrame:
        from ..rl.train import CURVE_FILE, train

        s, folder = cell.inputs
        result = train(s, folder, timesteps=timesteps, minutes=minutes)
        curve = pd.read_csv(Path(folder) / CURVE_FILE)
        return curve.assign(agent=folder, rollouts=result.rollouts, total_timesteps=result.timesteps,
                            train_seconds=result.seconds)

    rows = run(cells, compute, Table(Path(table), key="key", required=("agent", "reward")), n_jobs=n_jobs,
               progress=progress)
    return pd.concat(rows, ignore_index=True)


def test_windows(workloads: Mapping[str, Workload], n_windows: int) -> dict[str, list]:
    """The first ``n_windows`` test windows of each workload (cut once, handed to every cell)."""
    from ..errors import ClusterError
    from ..rl.workload import windows

    out = {}
    for preset, wl in workloads.items():
        wins = windows(wl)["test"]
        if len(wins) < n_windows:
            raise ClusterError(f"{wl.trace} on {preset}: {len(wins)} test windows of {wl.size} jobs, fewer than "
                               f"the {n_windows} asked for")
        out[preset] = wins[:n_windows]
    return out


def evaluate_windows(workloads: Mapping[str, Workload], *, agents: pd.DataFrame | None, placements: Sequence[str],
                     table: str | Path, n_windows: int, schedulers: Sequence[str] | None = None,
                     ablation: Sequence[str] = ("fifo", "easy"), transfer: bool = True, n_jobs: int = 1,
                     progress: bool | None = None) -> pd.DataFrame:
    """Per-window rows (`spotlab.rl.evaluate.run_windows`) on the first ``n_windows`` test windows of each
    workload: every heuristic with the first placement; the heuristics of ``ablation`` and each preset's first
    agent (its lowest seed) with every placement (the MILP placement costs milliseconds per decision); every
    agent on its own preset and, with ``transfer``, on the other presets (first placement). ``agents``: one row
    per agent (preset, seed, agent folder)."""
    names = list(schedulers) if schedulers is not None else heuristics()
    wins = test_windows(workloads, n_windows)
    first_seed = {} if agents is None else agents.groupby("preset")["seed"].min().to_dict()
    cells = []
    for preset, wl in workloads.items():
        for k, pl in enumerate(placements):
            for name in names:
                if k and name not in ablation:
                    continue
                cells.append(Cell("rl_evaluate", {"workload": wl.to_dict(), "placement": pl, "scheduler": name,
                                                  "n_windows": n_windows},
                                  labels={"preset": preset, "placement": pl, "scheduler": name, "trained_on": "-",
                                          "agent_seed": -1}, inputs=(wins[preset], pl, name)))
            for a in ([] if agents is None else agents.itertuples()):
                home = a.preset == preset
                if (k and not (home and a.seed == first_seed[a.preset])) or (not home and not transfer):
                    continue
                cells.append(Cell("rl_evaluate", {"workload": wl.to_dict(), "placement": pl, "agent": a.agent,
                                                  "n_windows": n_windows},
                                  labels={"preset": preset, "placement": pl, "scheduler": AGENT,
                                          "trained_on": a.preset, "agent_seed": int(a.seed)},
                                  inputs=(wins[preset], pl, a.agent)))

    def compute(cell: Cell) -> pd.DataFrame:
        from ..rl.scheduler import RLAgent

        mine, pl, what = cell.inputs
        sched = RLAgent(what) if cell.labels["scheduler"] == AGENT else what
        rows = run_windows(mine, [sched], pl, [cell.labels["scheduler"]])
        return rows.drop(columns=["scheduler", "placement"])

    rows = run(cells, compute, Table(Path(table), key="key", required=("window", "slowdown")), n_jobs=n_jobs,
               progress=progress)
    return pd.concat(rows, ignore_index=True)


def _interval(x: np.ndarray) -> tuple[float, float, float]:
    from ..rl.intervals import t_interval

    return t_interval(np.asarray(x, dtype=float))


def paired_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (preset, placement, scheduler, trained_on): each metric's mean over windows (and over agent seeds
    for the agent: each window's mean over seeds), with a 95% t-interval over the windows."""
    keys = ["preset", "placement", "scheduler", "trained_on"]
    per_window = rows.groupby(keys + ["window"], sort=False)[list(METRICS)].mean().reset_index()
    out = []
    for key, g in per_window.groupby(keys, sort=False):
        rec = dict(zip(keys, key))
        rec["windows"] = len(g)
        for m in METRICS:
            rec[m], rec[f"{m}_low"], rec[f"{m}_high"] = _interval(g[m].to_numpy())
        out.append(rec)
    return pd.DataFrame(out)


def changes(rows: pd.DataFrame, placement: str, seed: int = 0) -> pd.DataFrame:
    """The agent (on its own preset, mean over its seeds per window) against FCFS and against the best
    heuristic of each preset and metric: change of the mean, with a 95% paired bootstrap interval."""
    from ..rl.evaluate import HIGHER_IS_BETTER
    from ..rl.intervals import paired_change

    rng = np.random.default_rng(seed)
    home = (rows["scheduler"] != AGENT) | (rows["trained_on"] == rows["preset"])
    rows = rows[(rows["placement"] == placement) & home]
    out = []
    for preset, g in rows.groupby("preset", sort=False):
        for m in METRICS:
            wide = g.pivot_table(index="window", columns="scheduler", values=m, aggfunc="mean")
            if AGENT not in wide:
                continue
            others = [s for s in wide.columns if s != AGENT]
            means = wide[others].mean()
            best = (means.idxmax() if m in HIGHER_IS_BETTER else means.idxmin()) if others else None
            for against, name in (("fcfs", "fifo"), ("best", best)):
                if name is None or name not in wide:
                    continue
                c, lo, hi = paired_change(wide[AGENT].to_numpy(), wide[name].to_numpy(), rng)
                out.append({"preset": preset, "metric": m, "against": against, "scheduler": name, "change": c,
                            "low": lo, "high": hi, "windows": len(wide)})
    return pd.DataFrame(out)


def seed_claims(change_table: pd.DataFrame) -> pd.DataFrame:
    """The seed's three claims next to ours: per metric and baseline, the best change over the presets
    ("up to"), the preset where it happens, and the published number (`RLTUNE`)."""
    out = []
    for m, claim in CLAIM_METRICS.items():
        for against, g in change_table[change_table["metric"] == m].groupby("against", sort=False):
            best = g.loc[g["change"].idxmax() if m == "utilisation" else g["change"].idxmin()]
            out.append({"metric": m, "against": against, "ours_up_to": float(best["change"]),
                        "low": float(best["low"]), "high": float(best["high"]), "preset": best["preset"],
                        "scheduler": best["scheduler"], "published_up_to": RLTUNE[claim],
                        "holds": bool(best["change"] >= RLTUNE[claim]) if m == "utilisation"
                        else bool(best["change"] <= RLTUNE[claim])})
    return pd.DataFrame(out)


class Recorded(Scheduler):
    """Another scheduler, with the cluster's state recorded after each of its scheduling points."""

    name = "recorded"

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner
        self.trace: list[tuple[float, float, float, int]] = []

    def schedule(self, engine) -> None:
        self.inner.schedule(engine)
        st = engine.state
        free = st.total_free
        whole = sum(len(ps.by_free[ps.pool.gpus_per_node]) * ps.pool.gpus_per_node for ps in st.pools)
        self.trace.append((st.now, 1.0 - whole / free if free else 0.0,
                           1.0 - free / engine.cluster.gpus, len(st.queue)))


def fragmentation_trace(window, scheduler: Any, placement: str = "best_fit", label: str = "") -> pd.DataFrame:
    """One run's state over time (hours from the window's first arrival): fragmentation (share of free GPUs not
    on wholly free nodes), busy share of the GPUs and queued jobs, after each scheduling point."""
    from ..cluster.registry import make_scheduler
    from ..cluster.simulate import simulate

    rec = Recorded(make_scheduler(scheduler))
    simulate(window.cluster, window.jobs, scheduler=rec, placement=placement)
    frame = pd.DataFrame(rec.trace, columns=["time_s", "fragmentation", "busy", "queued"])
    t0 = min(j.arrival_s for j in window.jobs)  # hours into the window
    return frame.assign(time_h=(frame["time_s"] - t0) / 3600, scheduler=label or str(scheduler))


def workloads_for(presets: Sequence[str], **overrides: Any) -> dict[str, Workload]:
    """The `PRESET_WORKLOADS` of ``presets``, with fields replaced (e.g. ``load``)."""
    from ..errors import ClusterError

    unknown = [p for p in presets if p not in PRESET_WORKLOADS]
    if unknown:
        raise ClusterError(f"no workload for preset(s) {', '.join(unknown)}; known: {', '.join(PRESET_WORKLOADS)}")
    return {p: replace(PRESET_WORKLOADS[p], **{k: v for k, v in overrides.items() if v is not None})
            for p in presets}
