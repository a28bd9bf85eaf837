"""Episodes for the learning scheduler: windows of consecutive trace jobs, ready for the cluster engine.

A `Workload` names everything that decides the jobs: a cluster preset, a job trace, the offered load and the
share of multi-GPU jobs the trace is brought to (`spotlab.cluster.presets.cluster_jobs`), the window size and
the seed of the pool assignment. `windows` cuts the trace by time into train / validation / test windows that
never overlap (`spotlab.cluster.job_table.job_windows`) and turns each into engine jobs with
`spotlab.cluster.trace_jobs.trace_jobs` (one option: the trace's GPU count on its pool's GPU type, running for
the trace's duration). Each episode starts on an empty cluster at the window's first arrival.

A job no pool of the preset can ever hold is an error by default (a trace that does not fit the cluster is
usually a mistake); ``drop_unplaceable=True`` leaves such jobs out before the windows are cut and counts them,
as RLTune's simulator does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from ..cluster.state import Cluster, SimJob
from ..errors import JobTableError

__all__ = ["SPLITS", "Window", "Workload", "windows"]

SPLITS = ("train", "validation", "test")


@dataclass(frozen=True)
class Workload:
    """Which jobs an episode replays (module doc). ``load`` / ``multi_gpu_share``: None keeps the trace's own."""

    preset: str = "philly"
    trace: str = "philly-gpw"
    load: float | None = 1.0
    multi_gpu_share: float | None = None
    size: int = 256
    seed: int = 0
    drop_unplaceable: bool = False
    fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)) or self.size < 2:
            raise JobTableError(f"window size must be a whole number >= 2, got {self.size!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise JobTableError(f"seed must be a whole number >= 0, got {self.seed!r}")
        object.__setattr__(self, "fractions", tuple(float(f) for f in self.fractions))

    def to_dict(self) -> dict:
        return {"preset": self.preset, "trace": str(self.trace), "load": self.load,
                "multi_gpu_share": self.multi_gpu_share, "size": int(self.size), "seed": int(self.seed),
                "drop_unplaceable": bool(self.drop_unplaceable), "fractions": list(self.fractions)}


@dataclass(frozen=True)
class Window:
    """One episode: ``jobs`` on ``cluster``; ``split`` and ``index`` say which window of the trace it is."""

    split: str
    index: int
    cluster: Cluster
    jobs: tuple[SimJob, ...]
    start_s: float = 0.0  # the first submission, on the trace's clock
    meta: Mapping[str, object] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        return (self.split, self.index)


def windows(workload: Workload, *, root: object = None, download: bool = True) -> dict[str, list[Window]]:
    """The workload's windows per split (`SPLITS`), in time order; errors are one-line `SpotlabError`s."""
    from ..cluster.job_table import job_table, job_windows
    from ..cluster.presets import cluster_jobs, preset, unplaceable_jobs
    from ..cluster.trace_jobs import trace_jobs

    cluster = preset(workload.preset, root=root, download=download)
    table = job_table(workload.trace, seed=workload.seed, root=root, download=download)
    table = cluster_jobs(table, cluster, seed=workload.seed, multi_gpu_share=workload.multi_gpu_share,
                         load=workload.load)
    bad = table["pool"].isna().to_numpy()
    if bad.any():
        if not workload.drop_unplaceable:
            first = unplaceable_jobs(table, cluster).iloc[0]
            raise JobTableError(
                f"{int(bad.sum())} job(s) of trace {workload.trace!r} can never run on preset {workload.preset!r} "
                f"({cluster.gpus} GPUs), e.g. job {first['job_id']}: {first['reason']}; leave them out with "
                "drop_unplaceable=True (--drop-unplaceable)")
        attrs = dict(table.attrs)
        table = table[~bad].reset_index(drop=True)
        table.attrs = attrs
    cut = job_windows(table, size=int(workload.size), split=SPLITS, fractions=workload.fractions)
    out: dict[str, list[Window]] = {}
    for split, frames in cut.items():
        out[split] = [Window(split, int(f.attrs["window"]["index"]), cluster, trace_jobs(f, cluster),
                             float(f["submit_time_s"].iloc[0]),
                             {"rows": tuple(f.attrs["window"]["rows"]), "unplaceable_in_trace": int(bad.sum())})
                      for f in frames]
    return out
