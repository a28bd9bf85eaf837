"""A2 across zones — a prediction-free rule that chooses the zone from the spot lifetimes and prices seen so far
(SPEC §6, §9; the rule is ours).

Per slot and window, with no forecast:

1. **Where spot is worth having**: each zone's spot is priced at its spot price plus a restart's cost (the overhead
   at the on-demand price, and the egress of a move into it) spread over the spot lifetime expected there: the mean
   length of the spells of spot the job has seen in that zone (its own runs, and every zone's spells where the
   rules show all zones), shrunk towards the mean over all zones, starting from `prior_hours`. A zone whose spot
   keeps vanishing thus sinks in the order, as a preempted region does in SkyPilot's failover, without a rule for
   it. Under the leaderboard's final-zone prices, spot is priced at the first slot's prices instead.
2. **Never idle**: spot in the zone it is in while it lasts; else the first zone in that order that has spot
   (launch attempts in turn, a failed one free), if its priced spot is cheaper than on-demand; else on-demand where
   the job is (or, under final-zone prices, in the zone whose prices it will be billed at).
3. **Leaving on-demand** for spot only while the slack keeps `reserve` restarts after paying one, and only for a
   spell seen to have lasted long enough that as long again on spot would pay `confirm` restarts (the saving per
   hour against on-demand's price): a job that jumps on every short spell spends its slack on restarts and ends on
   on-demand when spot is plentiful, and a spell's age is the one sign of its residual life that needs no
   forecast (spells are heavy-tailed). Where the rules do not show a zone's spell, its age is unknown (0).
4. **Deadline**: the engine's safety net (wrapped by `make_policy`), and N_max on demand once two more restarts
   and a slot would not fit, so that the Can't Be Late guard (which keeps a just-preempted spot request)
   never has to act.
Where each rule comes from and what it gives on the benchmarks: docs/decisions/zone-policies.md.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..params import Interval, positive_hours
from ..simulation.interface import Action, Context, Observation
from .base import OnlinePolicy
from ..simulation.slots import ceil_slots, floor_slots
from .deadline import deadline_pressure


class PredictionFreeZones(OnlinePolicy):
    """Spot in the zone whose price over its seen spot lifetime is lowest, else on demand, with a slack reserve."""

    name = "prediction_free_zones"
    independent_windows = True
    reads_history = False

    def __init__(self, reserve: float = 2.0, prior_hours: float = 6.0, confirm: float = 2.0) -> None:
        self.reserve = reserve
        self.prior_hours = prior_hours
        self.confirm = confirm

    _parameter_constraints = {"reserve": [Interval(Real, 0, None)], "prior_hours": [positive_hours],
                              "confirm": [Interval(Real, 0, None)]}
    _parameter_help = {
        "reserve": "restarts of slack kept before leaving on-demand for spot",
        "prior_hours": "spot lifetime assumed in a zone before any spell has been seen",
        "confirm": "leave on-demand only for a spell old enough to pay this many restarts if it lasts as long again",
    }

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        zoned = ctx.zoned
        self.Z_ = 1 if zoned is None else zoned.z
        W = ctx.episodes.n
        self.final_pricing_ = zoned is not None and ctx.settings.pricing == "final_zone_first_slot"
        self.egress_ = (np.zeros((1, 1)) if zoned is None
                        else ctx.settings.move_usd(zoned.regions, ctx.job.checkpoint_gb))
        # spells of spot seen per window and zone: ended ones (count, total slots) and the one going on (its age)
        self.ended_n_ = np.zeros((W, self.Z_))
        self.ended_len_ = np.zeros((W, self.Z_))
        self.age_ = np.zeros((W, self.Z_))
        self.first_ = None

    def _seen(self, obs: Observation, zone: np.ndarray) -> None:
        """Update the spells from what this slot shows: every zone where the rules show them, else the job's."""
        W = obs.active.size
        if obs.zones_avail is not None:
            up = obs.zones_avail.T >= self.job.n_min  # (W, Z)
            known = np.ones_like(up)
        else:
            up = np.zeros((W, self.Z_), dtype=bool)
            known = np.zeros((W, self.Z_), dtype=bool)
            up[np.arange(W), zone] = obs.avail >= self.job.n_min
            known[np.arange(W), zone] = True
        ended = known & ~up & (self.age_ > 0)
        self.ended_n_ += ended
        self.ended_len_ += np.where(ended, self.age_, 0.0)
        self.age_ = np.where(known, np.where(up, self.age_ + 1, 0.0), np.where(self.age_ > 0, self.age_ + 1, 0.0))

    def lifetime_h(self) -> np.ndarray:
        """Expected spot lifetime per window and zone (hours): each zone's mean seen spell, shrunk to the mean over
        all zones with one spell's weight, which starts at `prior_hours`."""
        dt = self.ctx_.episodes.slot_hours
        n, total = self.ended_n_, self.ended_len_ * dt
        pooled = (total.sum(axis=1) + self.prior_hours) / (n.sum(axis=1) + 1.0)  # (W,)
        return (total + pooled[:, None]) / (n + 1.0)

    def act(self, obs: Observation):
        job, dt = self.job, self.ctx_.episodes.slot_hours
        W = obs.active.size
        rows = np.arange(W)
        zone = obs.zone if obs.zone is not None else np.zeros(W, dtype=np.int64)
        self._seen(obs, zone)
        if self.final_pricing_:
            if self.first_ is None:
                self.first_ = (obs.zones_spot_price.copy(), obs.zones_od_price.copy())
            sp, od = self.first_
        elif obs.zone is not None:
            sp, od = obs.zones_spot_price, obs.zones_od_price
        else:
            sp, od = obs.spot_price[None, :], obs.od_price[None, :]
        od_here = od[zone, rows]
        restart = job.overhead_h * job.n_max * od_here[:, None] + self.egress_[zone]  # (W, Z)
        priced = sp.T * job.n_max + restart / self.lifetime_h()  # per hour of the job on spot
        order = np.argsort(priced, axis=1, kind="stable")
        worth = np.take_along_axis(priced, order, axis=1) < (od_here * job.n_max)[:, None]
        order = np.where(worth, order, -1)
        here = obs.avail >= job.n_min
        if obs.zones_avail is not None:
            has = np.where(order >= 0, np.take_along_axis(obs.zones_avail.T >= job.n_min,
                                                         np.maximum(order, 0), axis=1), False)
            first = np.where(has.any(axis=1), order[rows, np.argmax(has, axis=1)], -1)
        elif obs.first_spot is not None:
            first = obs.first_spot(order)
        else:
            first = np.where(here & worth[:, 0], zone, -1)
        kept = (obs.held_s > 0) & here & (obs.held_s >= obs.prev_s)
        to_spot = np.where(kept, zone, first)
        spot_somewhere = to_spot >= 0
        slack = job.hard_deadline_h - obs.time_h - obs.remaining / job.max_rate - obs.pending_h
        on_od = (obs.prev_o > 0) & (obs.prev_s == 0)
        # the restart it pays, the reserve, and the margin at which rule 4 would send it back to on-demand
        can_leave = slack > (self.reserve + 3) * job.overhead_h + dt
        # a spell seen to have lasted a while is likely to last as long again (spells are heavy-tailed): leave
        # on-demand for one old enough that as long again on spot pays `confirm` restarts at the on-demand price
        age_h = np.where(to_spot >= 0, self.age_[rows, np.maximum(to_spot, 0)], 0.0) * dt
        sp_to = sp[np.maximum(to_spot, 0), rows]
        saving = np.maximum(od_here - sp_to, 1e-12)
        old_enough = age_h * saving >= self.confirm * job.overhead_h * od_here
        use_spot = spot_somewhere & (kept | ~on_od | (can_leave & old_enough))
        o = np.where(use_spot, 0, job.n_max)
        s = np.where(use_spot, job.n_max, 0)
        # on demand where the job is; under final-zone prices, in the zone whose first-slot spot price is lowest
        od_zone = np.where(on_od, zone, np.argmin(sp, axis=0)) if self.final_pricing_ else zone
        to = np.where(use_spot, to_spot, od_zone)
        # on demand for good once one more restart would hardly fit (a slot before the net would act: the Can't Be
        # Late guard keeps a just-preempted spot request, which can cost the deadline)
        full_od = (obs.prev_o >= job.n_max) & (obs.prev_s == 0)
        need = deadline_pressure(job, obs, dt, extra_overheads=1) & ~(kept & (obs.held_s >= job.n_max))
        hours = obs.remaining / job.max_rate + 2 * job.overhead_h
        need |= (ceil_slots(hours, dt) >= floor_slots(job.hard_deadline_h - obs.time_h, dt) - 1) & ~full_od
        o = np.where(need, job.n_max, o)
        s = np.where(need, 0, s)
        to = np.where(need, zone, to)
        if obs.zone is None:
            return o, s
        return Action(o, s, None, to)
