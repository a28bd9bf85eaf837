"""The policy interface: what a policy is told (`Context`), what it sees each slot (`Observation`), what it
must implement (`Policy`), and the deadline arithmetic shared by the rules and the safety net.

A policy proposes `(on_demand, spot)` GPU counts for every window at once; it may also return a third
array, `stop`, marking windows where it abandons the job for good (it then earns -miss_penalty, as a
miss). The simulator applies the market's rules to whatever a policy proposes and nothing else: the
deadline safety net is a wrapper around the policy (`policies.safety_net.SafetyNet`, applied by
`make_policy`), not a flag of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np

from ..errors import PolicyError
from ..job import Job
from ..registry import Params

if TYPE_CHECKING:  # annotations only: the simulator imports this module
    from ..simulator import Episodes, SimSettings

EPS = 1e-9

NET_VARIANTS = ("strict", "cbl", "off")
NetVariant = Literal["strict", "cbl", "off"]


@dataclass(frozen=True)
class Context:
    """What a policy is told before an episode. `episodes` holds the *whole* traces: only
    hindsight policies (the optimum, prediction oracles) may read beyond the current slot.

    `safety_net` / `give_up` say which deadline guard will override the policy's proposals (set by the
    `SafetyNet` wrapper; "off" when nothing guards it), so that a planner can plan within it."""

    job: Job
    episodes: "Episodes"
    settings: "SimSettings"
    horizon: int  # number of slots simulated (up to the hard deadline)
    seed: int = 0
    safety_net: NetVariant = "off"
    give_up: bool = False


@dataclass(frozen=True)
class Observation:
    """State of every window at the start of slot t (arrays of shape (W,))."""

    t: int
    time_h: float
    remaining: np.ndarray  # work units left
    pending_h: np.ndarray  # reconfiguration overhead still to pay
    held_o: np.ndarray  # allocation that survived into slot t (after preemption)
    held_s: np.ndarray
    prev_o: np.ndarray  # allocation that ran in slot t-1
    prev_s: np.ndarray
    avail: np.ndarray  # a_t: spot GPUs obtainable in slot t
    spot_price: np.ndarray
    od_price: np.ndarray
    active: np.ndarray  # job neither finished nor failed


class Policy(Protocol):
    """A scheduling policy: parameters in `__init__`, `reset` per batch of episodes, `act` per slot
    (returning `(o, s)` or `(o, s, stop)`), optionally `report()` (what it says of itself)."""

    name: str

    def reset(self, ctx: Context) -> None: ...

    def act(self, obs: Observation) -> tuple[np.ndarray, ...]: ...


class OnlinePolicy(Params):
    """Base of the online policies: keeps the context. `online = True` tells `make_policy` that the
    policy decides without hindsight, so the deadline safety net is put around it; hindsight planners
    (the optimum) set it False and are never overridden."""

    name = "online"
    online = True
    param_error = PolicyError

    def reset(self, ctx: Context) -> None:
        self.check_params()
        self.ctx_ = ctx

    @property
    def job(self) -> Job:
        return self.ctx_.job


def check_action(name: str, action, W: int, t: int, job: Job, active: np.ndarray):
    """`(o, s)` or `(o, s, stop)` from a policy as three arrays of shape (W,): a policy bug surfaces as a clear
    error, not as a silently wrong number."""
    try:
        o, s, *rest = action
        if len(rest) > 1:
            raise ValueError
    except (TypeError, ValueError):
        raise PolicyError(f"policy {name!r} must return (on_demand, spot) or (on_demand, spot, stop) at slot {t}, "
                          f"got {type(action).__name__}") from None
    if rest:
        stop = rest[0]
        if not (type(stop) is np.ndarray and stop.dtype == np.bool_ and stop.shape == (W,)):
            try:
                stop = np.broadcast_to(np.asarray(stop, dtype=bool), (W,))
            except ValueError:
                raise PolicyError(f"policy {name!r} returned a stop array of the wrong shape at slot {t} "
                                  f"(need {W} windows)") from None
    else:
        stop = np.zeros(W, dtype=bool)
    o, s = _counts(name, o, "on-demand", W, t), _counts(name, s, "spot", W, t)
    bad = active & ((o < 0) | (s < 0) | (o + s > job.n_max))
    if bad.any():
        w = int(np.flatnonzero(bad)[0])
        raise PolicyError(
            f"policy {name!r} asked for {o[w]} on-demand + {s[w]} spot GPUs at slot {t} (window {w}); "
            f"allowed: 0..{job.n_max} in total"
        )
    return o, s, stop


def _counts(name: str, v, label: str, W: int, t: int) -> np.ndarray:
    """GPU counts as an int64 array of shape (W,); arrays that already are one pass through untouched (the
    safety net's output is checked twice per slot: by the net and by the engine)."""
    if type(v) is np.ndarray and v.dtype == np.int64 and v.shape == (W,):
        return v
    try:
        v = np.broadcast_to(np.asarray(v), (W,))
    except ValueError:
        raise PolicyError(f"policy {name!r} returned actions of the wrong shape at slot {t} (need {W} windows)") from None
    if not np.issubdtype(v.dtype, np.integer):
        if np.any(~np.isfinite(v)) or np.any(v != np.round(v)):
            raise PolicyError(f"policy {name!r} returned a non-integer {label} GPU count at slot {t}")
    return v.astype(np.int64)


# --------------------------------------------------------------------------- deadline arithmetic


def ceil_slots(hours: np.ndarray, slot_hours: float) -> np.ndarray:
    """ceil(hours / slot) robust to float error (exact values on the grid are not bumped up)."""
    return np.ceil(np.asarray(hours) / slot_hours - 1e-7)


def floor_slots(hours: np.ndarray, slot_hours: float) -> np.ndarray:
    return np.floor(np.asarray(hours) / slot_hours + 1e-7)


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


# ------------------------------------------------------------------ pieces of the baseline rules


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
