"""A2: the prediction-free online policy (SPEC §6; the paper says it exists and is parameterised, the rule is ours).

It reads no forecast: only the current slot's observation (spot price ``p_t``, on-demand price ``p_o``,
obtainable spot GPUs ``a_t``, work left, allocation held, pending overhead) and the job. Per slot and window:

1. **Price threshold** (``theta``). Spot is *cheap* when ``p_t <= theta * p_o`` and at least N_min spot GPUs
   are obtainable; then take ``min(a_t, N_max)`` of them. Why: without a forecast, the ratio to the
   on-demand price is the only scale-free signal of a good deal; ``theta`` sets how good the deal must be
   before the job runs ahead of need (``theta = 0``: never unless free; ``theta >= max p_t / p_o``: any spot).
   A count below N_min cannot host the job, so it is not a deal at any price.

2. **Progress line** (``sigma``). The line ``L * t / (sigma * D)`` (capped at L) finishes the work by
   ``sigma * D``, where D is the soft deadline d, or the hard deadline for a job worth nothing by d (value 0,
   a cost-only job: finishing before the hard deadline would be paid for and earn nothing). The job is
   *behind* when the work done at the start of slot t is below the line at t (as in Uniform Progress).
   Behind, the job runs on N_max GPUs: cheap spot first, topped up with on-demand GPUs (``N_max - s`` of
   them), or N_max on-demand GPUs when spot is not cheap. On or above the line and spot not cheap: idle.
   Why: the line spreads the need for paid progress over the time before the deadline, so that expensive
   on-demand GPUs are used only as far as cheap spot has not kept pace; ``sigma < 1`` keeps
   ``(1 - sigma) * D`` of slack against restarts and preemptions. A line that full speed cannot keep
   (ending before ``L / H(N_max) + 2 * delta + one slot``) is moved to that earliest end: otherwise the job
   is behind from the first slot and runs N_max GPUs throughout, paying on-demand prices for work that spot
   could do (sigma = 0.8 put a 48 h job's line at 41.6 h of a 52 h deadline: $126 on the Can't Be Late
   leaderboard, worse than Greedy's $119).

3. **Hysteresis on on-demand** (``hysteresis_h``, default ``None`` = ``2 * job.overhead_h``). Once on
   on-demand (holding any on-demand GPU), keep the allocation held until the job is ``hysteresis_h`` hours
   ahead of the line *and* spot is cheap. Why: leaving on-demand for a cheap spot window costs a restart, and
   falling back when that window closes costs another; a lead of ``2 * delta`` hours pays for both (the same
   reason as Uniform Progress's ``2 * delta`` in Can't Be Late); leaving on-demand only to idle would cost a
   restart when the job falls behind again. An allocation of fewer than N_max GPUs is not kept while the job
   is behind the line (rule 2: behind, run N_max; it would only fall further behind). If a spot part of the
   held allocation was preempted, the job keeps what survived (the restart is due anyway) and, behind the
   line, tops up with on-demand GPUs to N_max: the restart is due, so full speed costs no extra one (keeping 2
   on-demand GPUs of a 2-8 GPU job behind its line finished it 5.5 h after its soft deadline on GCP H100
   us-central1-c, 262 $ below Uniform Progress, which finished in time). Survivors that cannot run on their
   own (fewer than N_min) while the job is on or ahead of its line are let go and rules 1-2 decide: nothing
   is owed to the line yet, and the restart is due whenever the job runs again. Topping them up to N_max on
   demand bought progress ahead of the line (a 6-8 GPU job on GCP H100 us-west1-a, `spotlab heldout --seed
   5`, shape 5: 10.3 $ below Uniform Progress in one of nine jobs; on the 173 other held-out cells of seeds 5,
   9 and 13 nothing moved).

4. **No flapping of the spot count.** When the job holds an intact spot-only allocation (no preemption)
   and spot is still cheap and the job not behind, the only change rule 1 could make is to *grow* the
   count because more spot GPUs became obtainable. That costs a restart, so it is done only when it
   finishes the job sooner, counting the restart and as if the GPUs stayed to the end:
   ``delta + R / H(n') < pending + R / H(n)`` (R work left, n held, n' new, ``pending`` the overhead still
   due on the held allocation, which a change would replace). Otherwise the held count is kept. Why: a
   restart is billed zero-progress time, and without a forecast the only safe estimate of its pay-back is
   the rest of the job; with delta = 0 the upgrade is always taken (it is free), near the end of a job it
   never is. A *drop* of availability below the held count is a preemption: the restart is forced, and
   rule 1 re-takes ``min(a_t, N_max)``.

5. **Deadline safety net**: the simulator's shared net (SPEC §6) is applied to this policy like to every
   online policy (wrapped in the safety net by `make_policy`); on top of it, the two deadline rules of Greedy and Uniform
   Progress (`base.deadline_rules`), so that the hard deadline also holds under the Can't Be Late guard.

Every request is either idle or N_min..N_max GPUs with spot within ``a_t``. ``theta``, ``sigma`` and
``hysteresis_h`` define the members of A3's pool.

**Defaults (theta = 1, sigma = 1)**: spot whenever it is cheaper than on-demand, a line to the deadline.
Why: without a forecast there is no basis for demanding a discount below the on-demand price, and a line
before the deadline pays on-demand prices for slack the deadline rules already protect. With these
defaults the policy is Uniform Progress made price-aware (it never buys spot dearer than on-demand), with
the cost-only target, the no-flapping rule and the restart-keeping rule above; where spot is always cheaper
it makes Uniform Progress's decisions (the leaderboard's 1,080 runs: $101.68, the same as Uniform
Progress). The former defaults (theta = 0.6, sigma = 0.8) were worse than Uniform Progress on jobs they were
not tuned for ($126.40 vs $101.68 on the leaderboard; 6.1 vs 57.3 $/job utility on multi-GPU H100 jobs).
Measured (tests/test_prediction_free.py): on random jobs over synthetic markets (1-8 GPUs, beta < 0 or > 0,
cost-only or valued, restart overhead up to 0.3 slot) its mean utility is at least Uniform Progress's less
2% of the all-on-demand cost, and above it on average; on held-out real zones (H100 europe-west3-c,
us-west1-a, us-east4-b, asia-southeast1-b; V100 us-east-2a, us-west-2b) it equals or beats it.

Limits: with a restart overhead of a whole slot it can lose to Uniform Progress by up to ~10% of the
on-demand cost (taking every newly obtainable spot GPU costs a slot each time); a held mixed or on-demand
allocation is kept under rule 3 even if spot became dear (a swap would cost a restart); the price
threshold has no hysteresis of its own, so a price oscillating around ``theta * p_o`` can start and stop
spot repeatedly (each start costs delta, bounded by the lead it buys). The "cbl" net (Can't Be Late
semantics, the CLI default for sky_spot JSON traces) keeps a just-preempted spot request; without the
deadline rules this policy missed the hard deadline in 12 of the 300 Can't Be Late windows with sigma = 1
(none with them).
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

    def __init__(self, theta: float = 1.0, sigma: float = 1.0, hysteresis_h: float | None = None):
        self.theta = theta
        self.sigma = sigma
        self.hysteresis_h = hysteresis_h

    _parameter_constraints = {
        "theta": [Interval(Real, 0, None)],  # spot is a deal below theta x the on-demand price
        "sigma": [Interval(Real, 0, 1, closed="right")],  # the line finishes the work by sigma x soft deadline
        "hysteresis_h": [None, Interval(Real, 0, None)],  # None: 2 x the restart overhead
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

