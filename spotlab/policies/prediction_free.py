"""A2: the prediction-free online policy (SPEC §6; the paper says it exists and is parameterised, the rule is ours).

It reads no forecast: only the current slot's observation (spot price ``p_t``, on-demand price ``p_o``,
obtainable spot GPUs ``a_t``, work left, allocation held, pending overhead) and the job. Per slot and window:

1. **Price threshold** (``theta``): spot is *cheap* when ``p_t <= theta * p_o`` and at least N_min spot GPUs are
   obtainable; then take ``min(a_t, N_max)`` (``theta = 0``: never unless free; ``theta >= max p_t / p_o``: any
   spot). Why: without a forecast, the ratio to the on-demand price is the only scale-free signal of a good deal.
2. **Progress line** (``sigma``): ``L * t / (sigma * D)`` (capped at L), D the soft deadline, or the hard one for
   a cost-only job. Behind it (work done at the start of slot t below the line at t), run N_max GPUs: cheap spot
   first, topped up with on-demand ones, or N_max on-demand; on or above it and spot not cheap, idle. A line full
   speed cannot keep (ending before ``L / H(N_max) + 2 * delta + one slot``) is moved to that earliest end. Why:
   on-demand GPUs are used only as far as cheap spot has not kept pace; ``sigma < 1`` keeps ``(1 - sigma) * D``
   of slack.
3. **Hysteresis on on-demand** (``hysteresis_h``, default ``2 * job.overhead_h``): once holding any on-demand
   GPU, keep the allocation until the job is ``hysteresis_h`` ahead of the line *and* spot is cheap (a lead of
   two restarts pays for leaving and coming back). Not below N_max while behind; after a preemption, keep the
   survivors and, behind the line, top up to N_max on demand (the restart is due anyway); survivors fewer than
   N_min on or ahead of the line are let go and rules 1-2 decide.
4. **No flapping of the spot count**: an intact spot-only allocation grows to newly obtainable spot GPUs only if
   that finishes the job sooner counting the restart: ``delta + R / H(n') < pending + R / H(n)``. A drop below
   the held count is a preemption, and rule 1 re-takes ``min(a_t, N_max)``.
5. **Deadline**: the simulator's shared net (wrapped by `make_policy`), plus the two deadline rules of Greedy and
   Uniform Progress (`base.deadline_rules`), so the hard deadline also holds under the Can't Be Late guard (the
   "cbl" net, which keeps a just-preempted spot request).

Every request is idle or N_min..N_max GPUs with spot within ``a_t``; ``theta``, ``sigma`` and ``hysteresis_h``
define the A2 members of A3's pool. Defaults ``theta = 1``, ``sigma = 1``: spot whenever it is not dearer than
on-demand, a line to the deadline, i.e. Uniform Progress made price-aware; where spot is always cheaper it makes
Uniform Progress's decisions. Limits: with a restart overhead of a whole slot it can lose to Uniform Progress by
up to ~10% of the on-demand cost; a held mixed or on-demand allocation is kept under rule 3 even if spot became
dear; the price threshold has no hysteresis of its own (a price oscillating around ``theta * p_o`` can start and
stop spot repeatedly, each start costing delta). Why each rule, the variants tried and the measurements:
docs/decisions/prediction-free-rule.md and docs/decisions/prediction-free-defaults.md.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..params import Interval
from ..simulation.slots import EPS
from .base import OnlinePolicy
from ..simulation.interface import Context, Observation
from .deadline import deadline_rules


class PredictionFree(OnlinePolicy):
    """Price threshold + progress line to ``sigma * d`` + hysteresis (see the module docstring)."""

    name = "prediction_free"
    independent_windows = True
    reads_history = False

    def __init__(self, theta: float = 1.0, sigma: float = 1.0, hysteresis_h: float | None = None):
        self.theta = theta
        self.sigma = sigma
        self.hysteresis_h = hysteresis_h

    _parameter_constraints = {
        "theta": [Interval(Real, 0, None)],  # spot is a deal below theta x the on-demand price
        "sigma": [Interval(Real, 0, 1, closed="right")],  # the line finishes the work by sigma x soft deadline
        "hysteresis_h": [None, Interval(Real, 0, None)],  # None: 2 x the restart overhead
    }
    _parameter_help = {
        "theta": "use spot when its price is at most theta x on-demand",
        "sigma": "the progress line finishes the work by sigma x soft deadline",
        "hysteresis_h": "hours to stay on a choice before switching back (None: 2 restart overheads)",
    }

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        job = ctx.job
        self.theta_ = float(self.theta)
        # the earliest line full speed can keep: the work at N_max, two restarts, and the slot by which the
        # start-of-slot check lags; a line ending before it would put the job behind from the first slot
        shortest = job.work / job.max_rate + 2 * job.overhead_h + ctx.episodes.slot_hours
        # a job worth nothing by its soft deadline (cost only) aims at the hard deadline: finishing earlier
        # would be paid for and earn nothing
        target = job.deadline_h if job.value > 0 else job.hard_deadline_h
        self.line_end_h_ = min(max(float(self.sigma) * target, shortest), target)
        self.lead_h_ = 2 * job.overhead_h if self.hysteresis_h is None else float(self.hysteresis_h)

    def act(self, obs: Observation):
        job = self.job
        full = job.n_max
        tol = EPS * max(1.0, job.work)

        # 1. price threshold
        s_new = np.minimum(obs.avail, full)
        cheap = (obs.spot_price <= self.theta_ * obs.od_price) & (s_new >= job.n_min)
        s_new = np.where(cheap, s_new, 0)

        # 2. progress line at the start of this slot
        done = job.work - obs.remaining
        line = job.work * min(1.0, obs.time_h / self.line_end_h_)
        behind = done < line - tol
        o = np.where(behind, full - s_new, 0)
        s = s_new

        # 3. hysteresis: stay on on-demand until the job is hysteresis_h hours ahead of the line and spot is
        # cheap (leaving on-demand only to idle would cost a restart when the job falls behind again)
        intact = obs.held_s == obs.prev_s
        lead_ok = done > line + self.lead_h_ * job.work / self.line_end_h_ + tol
        stay = (obs.held_o > 0) & (~lead_ok | ~cheap)
        # ... but not on fewer than N_max GPUs while behind the line: that falls further behind (rule 2)
        slow = obs.held_o + obs.held_s < full
        keep = stay & intact & ~(behind & slow)
        # the spot part was preempted: keep what survived (the restart is due anyway), topped up with
        # on-demand GPUs to N_max behind the line (the restart being due, full speed costs no extra one);
        # survivors too few to run on their own while the job is on or ahead of its line are let go, and rules
        # 1-2 decide (idle unless spot is cheap): nothing is owed to the line yet, and the restart is due
        # whenever the job runs again
        short = obs.held_o + obs.held_s < job.n_min
        retop = stay & ~intact & (behind | ~short)
        o = np.where(keep, obs.held_o, np.where(retop, np.where(behind, full - obs.held_s, obs.held_o), o))
        s = np.where(keep | retop, obs.held_s, s)

        # 4. keep an intact spot-only count unless growing it finishes sooner, restart included
        on_spot = (obs.held_o == 0) & (obs.held_s > 0) & intact & cheap & ~behind & ~stay
        grow = on_spot & (s_new > obs.held_s)
        n_old = np.where(grow, obs.held_s, full)  # safe counts where the test does not apply
        n_new = np.where(grow, s_new, full)
        t_old = obs.pending_h + obs.remaining / job.throughput(n_old)
        t_new = job.overhead_h + obs.remaining / job.throughput(n_new)
        hold = on_spot & ~(grow & (t_new < t_old - EPS))
        o = np.where(hold, 0, o)
        s = np.where(hold, obs.held_s, s)
        # 5. the deadline rules Greedy and Uniform Progress use, so that the policy also meets feasible
        # hard deadlines under the Can't Be Late guard (which keeps a just-preempted spot request)
        return deadline_rules(job, obs, o.astype(np.int64), s.astype(np.int64), self.ctx_.episodes.slot_hours)

