"""The policy interface: what a policy is told (`Context`), what it sees each slot (`Observation`), what it
must implement (`Policy`).

A policy proposes `(on_demand, spot)` GPU counts for every window at once; it may also return a third
array, `stop`, marking windows where it abandons the job for good (it then earns -miss_penalty, as a
miss). The simulator applies the market's rules to whatever a policy proposes and nothing else: the
deadline safety net is a wrapper around the policy (`policies.safety_net.SafetyNet`, applied by
`make_policy`), not a flag of the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, NamedTuple, Protocol

import numpy as np

from ..errors import PolicyError
from ..jobs.job import Job

if TYPE_CHECKING:
    from ..market.episodes import Episodes
    from ..market.zoned_episodes import ZonedEpisodes
    from .settings import SimSettings


NET_VARIANTS = ("strict", "cbl", "skynomad", "off")


NetVariant = Literal["strict", "cbl", "skynomad", "off"]

STAY = None  # the zone of an action that stays where it is


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
    zoned: "ZonedEpisodes | None" = None  # every zone's windows in a run across zones (`episodes`: the first zone's)


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
    # Across zones (all None in a market of one zone): the zone the job is in (avail and prices above are its),
    # every zone's prices (public, (Z, W)), every zone's availability when the rules show it for free, and
    # `probe(zones)` / `first_spot(order)`, which ask for it under the rules' price (see `ZoneQueries`).
    zone: np.ndarray | None = None
    zones_spot_price: np.ndarray | None = None
    zones_od_price: np.ndarray | None = None
    zones_avail: np.ndarray | None = None
    probe: "Callable[[np.ndarray], np.ndarray] | None" = None
    first_spot: "Callable[[np.ndarray], np.ndarray] | None" = None


class Action(NamedTuple):
    """A policy's proposal for every window: GPUs on demand and on spot, where it stops for good (`stop`), and the
    zone it runs in (`zone`; None or the current zone: stay). A plain `(o, s)` or `(o, s, stop)` tuple is an
    Action that stays."""

    on_demand: np.ndarray
    spot: np.ndarray
    stop: np.ndarray | None = None
    zone: np.ndarray | None = None


class Policy(Protocol):
    """A scheduling policy: parameters in `__init__`, `reset` per batch of episodes, `act` per slot
    (returning `(o, s)` or `(o, s, stop)`), optionally `report()` (what it says of itself)."""

    name: str

    def reset(self, ctx: Context) -> None: ...

    def act(self, obs: Observation) -> tuple[np.ndarray, ...]: ...


def check_action(name: str, action, W: int, t: int, job: Job, active: np.ndarray, zones: int = 1):
    """`(o, s)`, `(o, s, stop)` or an `Action` from a policy as four arrays of shape (W,): on-demand and spot GPUs,
    stop, and the zone (-1: stay where it is). A policy bug surfaces as a clear error, not as a silently wrong
    number."""
    zone = None
    if isinstance(action, Action):
        o, s, stop, zone = action
        rest = [] if stop is None else [stop]
    else:
        try:
            o, s, *rest = action
            if len(rest) > 1:
                raise ValueError
        except (TypeError, ValueError):
            raise PolicyError(f"policy {name!r} must return (on_demand, spot), (on_demand, spot, stop) or an Action "
                              f"at slot {t}, got {type(action).__name__}") from None
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
    if zone is None:
        zone = STAY
    else:
        zone = _counts(name, zone, "zone", W, t)
        bad = active & ((zone < -1) | (zone >= zones))
        if bad.any():
            w = int(np.flatnonzero(bad)[0])
            raise PolicyError(f"policy {name!r} asked for zone {zone[w]} at slot {t} (window {w}); the market has "
                              f"{zones} zone(s): 0..{zones - 1} (-1: stay)")
    return o, s, stop, zone


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
