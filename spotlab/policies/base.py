"""Shared pieces of the baseline rules, vectorised over windows."""

from __future__ import annotations

import numpy as np

from ..job import Job
from ..registry import Params
from ..simulator import EPS, Context, Observation, deadline_pressure


class OnlinePolicy(Params):
    """Base for online policies: keeps the context, passes through the safety net."""

    name = "online"
    uses_safety_net = True

    def reset(self, ctx: Context) -> None:
        self.ctx_ = ctx

    @property
    def job(self) -> Job:
        return self.ctx_.job



def spot_only(job: Job, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
    """All the spot GPUs one can hold (up to N_max), or idle if they cannot host the job."""
    s = np.minimum(obs.avail, job.n_max)
    s = np.where(s >= job.n_min, s, 0)
    return np.zeros_like(s), s


def deadline_rules(job: Job, obs: Observation, o: np.ndarray, s: np.ndarray, slot_hours: float):
    """The two deadline rules of Can't Be Late's Greedy and Uniform Progress.

    - If finishing needs every slot left even with two more restarts and the job is not on spot
      now, go on-demand (a later switch would cost another restart).
    - If it needs every slot left with one restart, keep a full spot allocation that is running
      with nothing pending, otherwise go on-demand.
    """
    full = job.n_max
    on_spot = obs.held_s > 0
    need2 = deadline_pressure(job, obs, slot_hours, extra_overheads=2) & ~on_spot
    o = np.where(need2, full, o)
    s = np.where(need2, 0, s)
    need1 = deadline_pressure(job, obs, slot_hours, extra_overheads=1)
    keep = on_spot & (obs.pending_h <= EPS) & (obs.held_o + obs.held_s == full)
    o = np.where(need1, np.where(keep, obs.held_o, full), o)
    s = np.where(need1, np.where(keep, obs.held_s, 0), s)
    return o, s
