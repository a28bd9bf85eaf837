"""UP(S): uniform progress across zones, moving on a preemption (SkyPilot's failover, as SkyNomad's `eager failover`
baseline; SPEC §9).

Each slot it decides as uniform progress does, assuming spot can be had: keep what runs if that is still the
decision; otherwise, for spot, try the zones in order of their spot price now (cheapest first, ties in the market's
order), the zones of the region it last ran in moved to the end (a preemption there is likely to be regional), and
launch in the first that has spot; where none has, go on demand in the zone it ran in if uniform progress would
without spot (or idle this slot when it had just left on-demand to try spot). Its uniform-progress rule is the
multi-zone one of SkyNomad's artifact: the "two restarts no longer fit" test is strict, and it may leave on-demand
for spot once progress is two restarts ahead of the line (docs/decisions/zone-baselines.md). On one zone it is
uniform progress that, when spot goes, waits or goes on demand in the same zone.
"""

from __future__ import annotations

import numpy as np

from ..simulation.interface import Action, Context, Observation
from ..simulation.slots import EPS, ceil_slots, floor_slots
from .base import OnlinePolicy

NONE, SPOT, OD = 0, 1, 2


class UpFailover(OnlinePolicy):
    """Uniform progress that moves to the cheapest zone with spot when its zone loses it (SkyNomad's UP(S))."""

    name = "up_failover"
    independent_windows = True
    reads_history = False

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        W = ctx.episodes.n
        zoned = ctx.zoned
        self.regions_ = np.array(zoned.regions if zoned is not None else ("zone",))
        self.last_zone_ = np.full(W, -1, dtype=np.int64)  # where an instance was running at a step's start
        self.leader_ = np.full(W, -1, dtype=np.int64)  # where the job ran in the previous slot, last seen
        self.exit_ = np.zeros(W, dtype=bool)  # left on-demand to try spot this slot

    def decide(self, obs: Observation, current: np.ndarray, has_spot: np.ndarray, strict_two: bool = True):
        """Uniform progress's request (NONE, SPOT, OD) per window, and where it left on-demand to try spot."""
        job, dt = self.job, self.ctx_.episodes.slot_hours
        done = job.work - obs.remaining
        rate = job.work / job.deadline_h
        tol = EPS * max(1.0, job.work)
        req = np.where(has_spot, SPOT, NONE)
        behind = done < obs.time_h * rate - tol
        req = np.where(behind, np.where(has_spot, SPOT, OD), req)
        ahead2 = done <= (obs.time_h + 2 * job.overhead_h) * rate + tol  # not yet 2 restarts ahead of the line
        req = np.where((current == OD) & (~has_spot | ahead2), OD, req)
        left = floor_slots(job.hard_deadline_h - obs.time_h, dt)
        hours = obs.remaining / job.max_rate
        need2 = ceil_slots(hours + 2 * job.overhead_h, dt)
        two = (need2 > left) if strict_two else (need2 >= left)
        req = np.where(two & (current != SPOT), OD, req)
        need1 = ceil_slots(hours + job.overhead_h, dt) >= left
        calm_spot = (current == SPOT) & (obs.pending_h <= EPS)
        req = np.where(need1, np.where(calm_spot, SPOT, OD), req)
        leave = (current == OD) & has_spot & (req == OD) & ~ahead2
        return np.where(leave, SPOT, req), leave

    def order(self, obs: Observation) -> np.ndarray:
        """Zones to try for spot, per window (W, Z): by spot price now, the region last run in moved to the end."""
        Z = obs.zones_spot_price.shape[0]
        rank = np.argsort(np.argsort(obs.zones_spot_price.T, axis=1, kind="stable"), axis=1, kind="stable")
        last = np.where(self.last_zone_ >= 0, self.last_zone_, 0)
        same = (self.regions_[None, :] == self.regions_[last][:, None]) & (self.last_zone_ >= 0)[:, None]
        key = same * Z + rank  # a zone of the last region after every other zone
        return np.argsort(key, axis=1, kind="stable")

    def _observe(self, obs: Observation):
        """Where the job is, whether and how it runs (NONE, SPOT, OD), and where it goes on demand when it must
        (the zone it runs in, else the one it last ran in, else the first); notes where it ran."""
        W = obs.active.size
        running = obs.held_o + obs.held_s > 0
        current = np.where(obs.held_s > 0, SPOT, np.where(obs.held_o > 0, OD, NONE))
        zone = obs.zone if obs.zone is not None else np.zeros(W, dtype=np.int64)
        self.leader_ = np.where(obs.prev_o + obs.prev_s > 0, zone, self.leader_)
        self.last_zone_ = np.where(running, zone, self.last_zone_)
        fallback = np.where(running, zone, np.where(self.leader_ >= 0, self.leader_, 0))
        return zone, running, current, fallback

    def act(self, obs: Observation):
        job = self.job
        W = obs.active.size
        zone, running, current, fallback = self._observe(obs)
        req, leave = self.decide(obs, current, np.ones(W, dtype=bool))
        keep = running & (req == current)
        o = np.where(keep, obs.held_o, 0)
        s = np.where(keep, obs.held_s, 0)
        to = zone.copy()
        want_spot = ~keep & (req == SPOT)
        if want_spot.any():
            if obs.first_spot is not None:
                found = obs.first_spot(self.order(obs))
            else:  # one zone: its own spot
                found = np.where(obs.avail >= job.n_min, zone, -1)
            got = want_spot & (found >= 0)
            s = np.where(got, job.n_max, s)
            to = np.where(got, found, to)
            none = want_spot & (found < 0)
            if none.any():
                req2, _ = self.decide(obs, np.full(W, NONE), np.zeros(W, dtype=bool))
                go_od = none & ~leave & (req2 == OD)
                o = np.where(go_od, job.n_max, o)
                to = np.where(go_od, fallback, to)
        od = ~keep & (req == OD)
        o = np.where(od, job.n_max, o)
        to = np.where(od, fallback, to)
        return Action(o, s, None, to)
