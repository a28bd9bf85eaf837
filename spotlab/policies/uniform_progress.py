"""Uniform Progress (Wu et al., "Can't Be Late", NSDI'24).

Keep the work done on or above the line `L * t / d` that finishes exactly at the deadline: when
behind it use spot if available, else on-demand; once on on-demand, stay there (hysteresis) while
spot is unavailable or progress is not yet `2 * delta` hours ahead of the line, so that a short
spot window does not cost two restarts. Then the deadline rules of Greedy apply.

Generalised to N_min..N_max GPUs: when behind, take the obtainable spot GPUs and top up to N_max
with on-demand ones; "on on-demand" means holding any on-demand GPU.
"""

from __future__ import annotations

import numpy as np

from ..simulation.slots import EPS
from .base import OnlinePolicy
from ..simulation.interface import Observation
from .deadline import deadline_rules, spot_only


class UniformProgress(OnlinePolicy):
    name = "uniform_progress"
    independent_windows = True
    reads_history = False

    def __init__(self, hysteresis: bool = True):
        self.hysteresis = hysteresis

    _parameter_help = {
        "hysteresis": "stay on on-demand until spot is back and progress is 2 restarts ahead of the line",
    }

    def act(self, obs: Observation):
        job = self.job
        dt = self.ctx_.episodes.slot_hours
        o, s = spot_only(job, obs)
        spot_ok = s > 0
        done = job.work - obs.remaining
        rate_line = job.work / job.deadline_h
        behind = done < obs.time_h * rate_line - EPS * max(1.0, job.work)
        o = np.where(behind, job.n_max - s, o)
        if self.hysteresis:
            on_od = obs.held_o > 0
            near_line = done <= (obs.time_h + 2 * job.overhead_h) * rate_line + EPS * max(1.0, job.work)
            stay = on_od & (~spot_ok | near_line)
            o = np.where(stay, obs.held_o, o)
            s = np.where(stay, obs.held_s, s)
        return deadline_rules(job, obs, o, s, dt)
