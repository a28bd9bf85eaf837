"""Slack reserve: wait for spot while the slack allows, but keep the slack that future restarts will need.

A prediction-free online policy for cost-minimising jobs with a deadline (ours; made for the Can't Be Late
setting of one instance, generalised to N_min..N_max GPUs). It reads only the present slot and the past of the
trace (``Episodes.history_avail`` before the window, the slots already seen inside it), never the future.

**Slack** is the time the job can still lose and finish by the soft deadline d at full speed:
``slack = (d - t) - R / H(N_max) - pending`` (R work left, ``pending`` the restart overhead still due), with
``d - t`` floored to whole slots like the Can't Be Late guard. It only shrinks: idle slots and restarts spend
it, running at full speed keeps it.

Rules, per slot and window:

1. **Spot is usable** (at least N_min spot GPUs, cheaper than on-demand): run all of them (up to N_max), also
   leaving on-demand for it; the switch costs one restart ``delta`` of slack, which rule 2 has kept aside.
2. **Spot is not usable**: stay idle while ``slack - delta > reserve``; otherwise run N_max on-demand GPUs, and
   once on on-demand stay there until spot is usable again. Why: the slack pays for idle waiting and for
   restarts; Greedy spends it all on waiting and then finishes on on-demand even when spot comes back, while
   keeping back what the rest of the job's restarts need lets the policy catch every later spot spell.
3. **The reserve** is ``4 * delta + slot + (2 * delta + slot / 2) * lambda * (d - t)``: two round trips of
   restarts and one slot (``guard_slots``, default 1: the deadline rules round the work's time up to whole
   slots) as a floor, plus two restarts and half a slot per spot spell expected in the time left. ``lambda``
   (spells per hour) counts the n times spot went from usable to not usable over the T hours of history and
   slots seen, plus a prior of ``prior_rate`` spells per hour worth ``prior_hours`` hours, and is planned on its
   upper confidence bound ``(n + z^2/2 + z * sqrt(n + z^2/4)) / T`` (Poisson, ``z = 3``). Why: how often spot
   comes and goes is a property of the market its past shows; a reserve too small pins the job to on-demand
   GPUs, one too large only waits less, so with little history the policy keeps more.
4. **Deadline**: the deadline rules of Greedy and Uniform Progress (`base.deadline_rules`) and the simulator's
   safety net, as for every online policy, so the hard deadline holds.

Limits: it minimises cost to meet d and does not weigh a job's value (a job not worth finishing is still
finished); partial spot is taken as usable and runs slower, and rule 2 or the deadline rules then call on-demand
GPUs. How the constants were chosen and what it costs on the Can't Be Late leaderboard and on windows the
leaderboard does not use: docs/decisions/slack-reserve.md.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..params import Interval
from ..simulation.interface import Context, Observation
from .base import OnlinePolicy
from .deadline import deadline_rules, spot_only
from ..simulation.slots import floor_slots


class SlackReserve(OnlinePolicy):
    """Wait for spot while the slack exceeds what future restarts need (see the module docstring)."""

    name = "slack_reserve"

    def __init__(self, floor_restarts: float = 4.0, prior_rate: float = 0.3, prior_hours: float = 24.0,
                 z: float = 3.0, guard_slots: float = 1.0):
        self.floor_restarts = floor_restarts
        self.prior_rate = prior_rate
        self.prior_hours = prior_hours
        self.z = z
        self.guard_slots = guard_slots

    _parameter_constraints = {k: [Interval(Real, 0, None)]
                              for k in ("floor_restarts", "prior_rate", "prior_hours", "z", "guard_slots")}
    _parameter_help = {
        "floor_restarts": "restarts always kept in reserve (slack in units of the restart overhead)",
        "prior_rate": "prior spot spells per hour, before the trace's history is seen",
        "prior_hours": "weight of that prior, in hours of history",
        "z": "confidence of the upper bound on spells per hour (standard deviations)",
        "guard_slots": "slots of slack kept beyond the restarts, for the deadline guard's rounding",
    }

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        ep = ctx.episodes
        dt = ep.slot_hours
        W = ep.n
        # spell starts seen and hours observed, seeded with the prior
        self.spells_ = np.full(W, float(self.prior_rate) * float(self.prior_hours))
        self.hours_ = np.full(W, float(self.prior_hours))
        self.last_up_ = np.ones(W, dtype=bool)
        if ep.history_avail is not None:
            hist = ep.history_avail
            for k in range(hist.shape[1]):  # oldest first; NaN = before the trace began
                col = hist[:, k]
                seen = np.isfinite(col)
                up = np.where(seen, col, 0) >= ctx.job.n_min
                self._observe(up, seen, dt)

    def _observe(self, up: np.ndarray, seen: np.ndarray, dt: float) -> None:
        self.spells_ += seen & self.last_up_ & ~up
        self.hours_ += np.where(seen, dt, 0.0)
        self.last_up_ = np.where(seen, up, self.last_up_)

    def report(self) -> dict:
        """Mean estimated spell rate at the end (spells per hour), for the result's `policy_report`."""
        return {"spell_rate_per_h": float(np.mean(self.spells_ / self.hours_))}

    def act(self, obs: Observation):
        job = self.job
        dt = self.ctx_.episodes.slot_hours
        delta = job.overhead_h
        o, s = spot_only(job, obs)
        usable = (s > 0) & (obs.spot_price < obs.od_price)
        s = np.where(usable, s, 0)
        self._observe(usable, np.ones_like(usable), dt)
        z = float(self.z)
        n = self.spells_
        rate = (n + z * z / 2 + z * np.sqrt(n + z * z / 4)) / self.hours_

        left = floor_slots(job.deadline_h - obs.time_h, dt) * dt
        slack = left - obs.remaining / job.max_rate - obs.pending_h
        reserve = (float(self.floor_restarts) * delta + float(self.guard_slots) * dt
                   + (2 * delta + dt / 2) * rate * np.maximum(left, 0.0))
        go_od = ~usable & ((slack - delta <= reserve) | (obs.held_o > 0))
        o = np.where(go_od, job.n_max, 0)
        s = np.where(go_od, 0, s)
        # keep a held on-demand allocation as it is (no restart) while spot is not usable
        keep = go_od & (obs.held_o > 0)
        o = np.where(keep, obs.held_o, o)
        s = np.where(keep, obs.held_s, s)
        return deadline_rules(job, obs, o.astype(np.int64), s.astype(np.int64), dt)
