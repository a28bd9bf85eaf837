"""The deadline safety net (SPEC §6), as a wrapper around an online policy.

Why a wrapper: whether a policy is guarded, and by which rule, is a property of how the policy is run,
not of the market's rules; a wrapper (Gymnasium's idea) keeps the engine free of it and lets any policy,
including a user's, be guarded or not without the engine knowing. `make_policy` puts it around every
online policy ("strict" unless told otherwise); hindsight plans are never wrapped.

Variants:
- "strict": switch to N_max on-demand GPUs when, after the proposed allocation has run this slot,
  N_max on-demand GPUs could no longer finish by the hard deadline (keeping an intact full allocation
  with no pending overhead);
- "cbl": the Can't Be Late guard, which also keeps a spot request whose instance was just preempted
  (so that slot is lost); the peer's jobs are of one size, and a request short of an elastic job's N_max GPUs
  is not kept (it could leave the job short of its deadline);
- "skynomad": SkyNomad's: in one zone the Can't Be Late guard, a kept spot request that was just preempted going
  on demand; across zones a latch: once finishing needs every slot left with one restart, N_max on-demand GPUs
  for good, where a spot job runs, or where none runs in the zone whose on-demand price for the work left plus
  the egress to it is lowest;
- "off": no guard.

`give_up=True`: where the net fires and finishing on N_max on-demand GPUs would cost more than the value
still to be had plus the miss penalty, the job is stopped instead (it earns -miss_penalty and costs
nothing more): the net then protects the utility, not the completion. Off by default.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..errors import PolicyError
from ..jobs.job import Job
from ..simulation.slots import EPS
from ..simulation.interface import NET_VARIANTS, Action, Context, Observation, check_action
from ..simulation.slots import ceil_slots, floor_slots
from .deadline import deadline_pressure, not_worth_finishing


def _too_late_after(job: Job, obs: Observation, o: np.ndarray, s: np.ndarray, slot_hours: float,
                    moves: np.ndarray | None = None) -> np.ndarray:
    """The strict net's trigger: True where, after the proposed allocation has run this slot (by the
    simulator's rules: spot clipped to what is obtainable, below N_min idle, a change pays the overhead),
    N_max on-demand GPUs starting next slot (one more restart) could no longer finish by the hard deadline.
    Counting this slot's own progress makes the net exactly as late as safety allows: a plan that uses spot
    up to the last safe slot is not overridden, and the deadline still holds whatever spot does next."""
    dt = slot_hours
    s_eff = np.minimum(s, obs.avail)
    if moves is not None:  # spot in another zone is not counted on (its availability may be unseen) ...
        s_eff = np.where(moves, 0, s_eff)
    n = o + s_eff
    run = n >= job.n_min
    n = np.where(run, n, 0)
    preempted = obs.held_s < obs.prev_s
    change = run & ((o != obs.prev_o) | (s_eff != obs.prev_s) | preempted)
    if moves is not None:  # ... and a move restarts the job
        change |= run & moves
    pending = np.where(change, job.overhead_h, obs.pending_h)
    work = np.where(run, job.throughput(n) * (dt - np.minimum(pending, dt)), 0.0)
    left_after = obs.remaining - work
    done = left_after <= EPS * max(1.0, job.work)
    need = ceil_slots(np.maximum(left_after, 0.0) / job.max_rate + job.overhead_h, dt)
    slots_after = floor_slots(job.hard_deadline_h - obs.time_h, dt) - 1
    return ~done & (need > slots_after)


def apply_safety_net(job: Job, obs: Observation, o: np.ndarray, s: np.ndarray, variant: str, slot_hours: float,
                     give_up: bool = False, moves: np.ndarray | None = None):
    """Override a proposal where the deadline is at stake: N_max on-demand GPUs, except that a full
    allocation already running with no pending overhead is kept. Returns (o, s, quit): with `give_up`,
    `quit` marks the windows where the net stops the job instead (`not_worth_finishing`)."""
    quit = np.zeros(obs.active.shape, dtype=bool)
    if variant == "off":
        return o, s, quit
    if variant == "cbl":
        trig = deadline_pressure(job, obs, slot_hours) & obs.active
    else:
        trig = _too_late_after(job, obs, o, s, slot_hours, moves) & obs.active
    if not trig.any():
        return o, s, quit
    if give_up:
        quit = trig & not_worth_finishing(job, obs, slot_hours)
        trig = trig & ~quit
        o = np.where(quit, 0, o)
        s = np.where(quit, 0, s)
    keep = trig & (_keeps(job, obs, spot=True, intact=False) if variant == "cbl"
                   else _keeps(job, obs, spot=False, intact=True))
    o = np.where(trig, np.where(keep, obs.prev_o, job.n_max), o)
    s = np.where(trig, np.where(keep, obs.prev_s, 0), s)
    return o, s, quit


def _keeps(job: Job, obs: Observation, spot: bool, intact: bool) -> np.ndarray:
    """Where a net that fires keeps the allocation that ran instead of N_max on-demand GPUs: nothing pending and all
    N_max GPUs held (a request short of them could leave the job short of its deadline); `spot`: a spot request only
    (the Can't Be Late guard); `intact`: none of it preempted."""
    keep = (obs.pending_h <= EPS) & (obs.prev_o + obs.prev_s == job.n_max)
    if spot:
        keep &= obs.prev_s > 0
    if intact:
        keep &= obs.held_s == obs.prev_s
    return keep


def check_variant(variant: object, give_up: object) -> None:
    if variant not in NET_VARIANTS:
        raise PolicyError(f"safety net must be one of {', '.join(NET_VARIANTS)}, got {variant!r}")
    if not isinstance(give_up, (bool, np.bool_)):
        raise PolicyError(f"give_up must be true or false, got {give_up!r}")
    if give_up and variant == "off":
        raise PolicyError("give_up lets the safety net stop a job; with the net off (safety net 'off') there is "
                          "none to do it")


class SafetyNet:
    """Guard an online policy's proposals with the deadline net (see the module doc).

    The wrapped policy is told the guard through `Context.safety_net` / `Context.give_up`, so a planner can
    plan within it; `report()` adds the variant and the share of alive slots the net overrode.
    Attributes not found here are read from the wrapped policy (its parameters, fitted state)."""

    def __init__(self, policy: Any, variant: str = "strict", give_up: bool = False) -> None:
        check_variant(variant, give_up)
        if isinstance(policy, SafetyNet):
            raise PolicyError("the policy already has a safety net; wrap the unwrapped policy (.unwrapped)")
        self.policy = policy
        self.variant = variant
        self.give_up = bool(give_up)

    @property
    def name(self) -> str:
        return getattr(self.policy, "name", type(self.policy).__name__)

    @property
    def unwrapped(self) -> Any:
        return self.policy

    def __getattr__(self, key: str) -> Any:
        if key == "policy":  # not set yet (e.g. while unpickling): no recursion
            raise AttributeError(key)
        return getattr(self.policy, key)

    def __repr__(self) -> str:
        return f"SafetyNet({self.policy!r}, variant={self.variant!r}, give_up={self.give_up})"

    def reset(self, ctx: Context) -> None:
        self._job, self._dt, self._W = ctx.job, ctx.episodes.slot_hours, ctx.episodes.n
        self._alive = self._overridden = 0
        self._latched = np.zeros(self._W, dtype=bool)
        self._leader = np.full(self._W, -1, dtype=np.int64)
        self._egress = None
        if ctx.zoned is not None:
            self._egress = ctx.settings.move_usd(ctx.zoned.regions, ctx.job.checkpoint_gb)
        self.policy.reset(dataclasses.replace(ctx, safety_net=self.variant, give_up=self.give_up))

    def act(self, obs: Observation):
        if self.variant == "skynomad":
            return self._skynomad(obs)
        zones = 1 if obs.zones_spot_price is None else obs.zones_spot_price.shape[0]
        o, s, stop, zone = check_action(self.name, self.policy.act(obs), self._W, obs.t, self._job, obs.active,
                                        zones)
        moves = None if zone is None else (zone >= 0) & (zone != obs.zone)
        o2, s2, quit = apply_safety_net(self._job, obs, o, s, self.variant, self._dt, self.give_up, moves)
        if o2 is not o:
            changed = (o2 != o) | (s2 != s)
            self._overridden += int((obs.active & changed).sum())
            if moves is not None and self.variant == "strict":  # the net's on-demand GPUs stay where the job is
                zone = np.where(changed, -1, zone)
        self._alive += int(obs.active.sum())
        return Action(o2, s2, quit | stop, zone)

    def _skynomad(self, obs: Observation):
        """SkyNomad's net (see the module doc): in one zone its guard; across zones its latch."""
        job, dt = self._job, self._dt
        zones = 1 if obs.zones_spot_price is None else obs.zones_spot_price.shape[0]
        o, s, stop, zone = check_action(self.name, self.policy.act(obs), self._W, obs.t, job, obs.active, zones)
        self._alive += int(obs.active.sum())
        left = obs.active & (obs.remaining > EPS * max(1.0, job.work))
        trig = deadline_pressure(job, obs, dt) & left
        if zones == 1:
            keep = trig & _keeps(job, obs, spot=True, intact=True)
            o2 = np.where(trig, np.where(keep, obs.prev_o, job.n_max), o)
            s2 = np.where(trig, np.where(keep, obs.prev_s, 0), s)
            self._overridden += int((obs.active & ((o2 != o) | (s2 != s))).sum())
            return Action(o2, s2, stop, zone)
        ran = obs.prev_o + obs.prev_s > 0
        self._leader = np.where(ran, obs.zone, self._leader)
        new = trig & ~self._latched
        self._latched |= trig & obs.active
        net = self._latched & obs.active
        if not net.any():
            return Action(o, s, stop, zone)
        target = obs.zone if zone is None else np.where(zone >= 0, zone, obs.zone)
        place = obs.zone.copy()
        idle = new & ~(obs.held_o + obs.held_s > 0)
        if idle.any():  # no instance: the zone where the work left costs least on demand, egress included
            hours = obs.remaining / job.max_rate
            price = obs.zones_od_price * (job.n_max * hours)[None, :]  # (Z, W)
            if self._egress is not None:
                src = np.where(self._leader >= 0, self._leader, 0)
                price = price + np.where(self._leader >= 0, self._egress[src].T, 0.0)
            place = np.where(idle, np.argmin(price, axis=0), place)
        o2 = np.where(net, job.n_max, o)
        s2 = np.where(net, 0, s)
        zone2 = np.where(net, place, target)
        self._overridden += int((net & ((o2 != o) | (s2 != s))).sum())
        return Action(o2, s2, stop, zone2)

    def report(self) -> dict:
        inner = self.policy.report() if hasattr(self.policy, "report") else {}
        return {**inner, "safety_net": self.variant, "give_up": self.give_up,
                "net_override_rate": self._overridden / self._alive if getattr(self, "_alive", 0) else 0.0}
