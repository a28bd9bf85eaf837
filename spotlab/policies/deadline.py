"""Deadline arithmetic shared by the rules and the safety net, and the pieces of the baseline rules."""

from __future__ import annotations

import numpy as np

from ..jobs.job import Job
from ..simulation.interface import Observation
from ..simulation.slots import EPS, ceil_slots, floor_slots


def deadline_pressure(job: Job, obs: Observation, slot_hours: float, extra_overheads: int = 1) -> np.ndarray:
    """True where finishing on N_max on-demand GPUs (with `extra_overheads` restarts) needs every
    slot left before the hard deadline: the trigger of the safety net (Can't Be Late's need >= R)."""
    need = ceil_slots(obs.remaining / job.max_rate + extra_overheads * job.overhead_h, slot_hours)
    left = floor_slots(job.hard_deadline_h - obs.time_h, slot_hours)
    return need >= left


def not_worth_finishing(job: Job, obs: Observation, slot_hours: float) -> np.ndarray:
    """True where finishing now on N_max on-demand GPUs (one restart, or what is left of the current one where
    the job already runs on them) would cost more than the value it would still earn plus the miss penalty it
    avoids: giving up is then the better utility. Why the current restart: a tight job that had just started
    on N_max on-demand GPUs was counted a fresh restart, so it could not finish in time and was stopped, though
    worth 3x its cost (the case: docs/decisions/chc-give-up.md)."""
    running = (obs.prev_o == job.n_max) & (obs.prev_s == 0)
    hours = obs.remaining / job.max_rate + np.where(running, obs.pending_h, job.overhead_h)
    cost = job.n_max * obs.od_price * hours
    worth = job.value_at(obs.time_h + hours) + job.miss_penalty
    return cost > worth + EPS


def spot_only(job: Job, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
    """All the spot GPUs one can hold (up to N_max), or idle if they cannot host the job."""
    s = np.minimum(obs.avail, job.n_max)
    if job.n_min > 1:
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
    if need2.any():  # (rarely: most slots of most windows are far from the deadline)
        o = np.where(need2, full, o)
        s = np.where(need2, 0, s)
    need1 = deadline_pressure(job, obs, slot_hours, extra_overheads=1)
    if need1.any():
        keep = on_spot & (obs.pending_h <= EPS) & (obs.held_o + obs.held_s == full)
        o = np.where(need1, np.where(keep, obs.held_o, full), o)
        s = np.where(need1, np.where(keep, obs.held_s, 0), s)
    return o, s
