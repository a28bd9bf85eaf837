"""A2: the prediction-free online policy (SPEC §6; the paper says it exists and is parameterised, the rule is ours).

It reads no forecast: only the current slot's observation (spot price ``p_t``, on-demand price ``p_o``,
obtainable spot GPUs ``a_t``, work left, allocation held, pending overhead) and the job. Per slot and window:

1. **Price threshold** (``theta``). Spot is *cheap* when ``p_t <= theta * p_o`` and at least N_min spot GPUs
   are obtainable; then take ``min(a_t, N_max)`` of them. Why: without a forecast, the ratio to the
   on-demand price is the only scale-free signal of a good deal; ``theta`` sets how good the deal must be
   before the job runs ahead of need (``theta = 0``: never unless free; ``theta >= max p_t / p_o``: any spot).
   A count below N_min cannot host the job, so it is not a deal at any price.

2. **Progress line** (``sigma``). The line ``L * t / (sigma * d)`` (capped at L) finishes the work by
   ``sigma * d``, a fraction of the soft deadline d (``job.deadline_h``). The job is *behind* when the work
   done at the start of slot t is below the line at t (as in Uniform Progress). Behind, the job runs on
   N_max GPUs: cheap spot first, topped up with on-demand GPUs (``N_max - s`` of them), or N_max on-demand
   GPUs when spot is not cheap. On or above the line and spot not cheap: idle. Why: the line spreads the
   need for paid progress over the time before the deadline, so that expensive on-demand GPUs are used only
   as far as cheap spot has not kept pace; ``sigma < 1`` keeps ``(1 - sigma) * d`` of slack against
   restarts and preemptions instead of aiming at the deadline itself, so the value is not lost to a late
   spurt. Checking at the start of the slot means a job starts on the line and never buys on-demand GPUs
   in slot 0; it lags the line by at most one slot of line progress, which the slack absorbs. If
   ``sigma * d`` is shorter than the job on N_max GPUs (``L / H(N_max)`` plus restarts), the line cannot be
   kept: the job is behind from slot 1 on and runs N_max GPUs throughout (cheap spot first).

3. **Hysteresis on on-demand** (``hysteresis_h``, default ``None`` = ``2 * job.overhead_h``). Once on
   on-demand (holding any on-demand GPU), keep the allocation held until the work done is ahead of the line
   by ``hysteresis_h`` hours of full-speed work (``hysteresis_h * H(N_max)``). Why: leaving on-demand for a
   cheap spot window costs a restart, and falling back when that window closes costs another; a lead of
   ``2 * delta`` hours at full speed pays for both, so a short cheap window cannot by itself put the job
   behind the line (the same reason as Uniform Progress's ``2 * delta`` in Can't Be Late). If a spot part of
   the held allocation was preempted, a restart is due anyway, so the job re-plans as when behind (spot first,
   on-demand to N_max).

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
   online policy (``uses_safety_net = True``); on top of it, the two deadline rules of Greedy and Uniform
   Progress (`base.deadline_rules`), so that the hard deadline also holds under the Can't Be Late guard.

Every request is either idle or N_min..N_max GPUs with spot within ``a_t``. ``theta`` (default 0.6),
``sigma`` (default 0.8) and ``hysteresis_h`` define the members of A3's pool. Limits: a held mixed or
on-demand allocation is kept under rule 3 even if spot became dear (a swap would cost a restart); the
price threshold has no hysteresis of its own, so a price oscillating around ``theta * p_o`` can start and
stop spot repeatedly (each start costs delta, bounded by the lead it buys). The "cbl" net (Can't Be Late semantics, the CLI
default for sky_spot JSON traces) keeps a just-preempted spot request; without the deadline rules this
policy missed the hard deadline in 12 of the 300 Can't Be Late windows with sigma = 1 (none with them).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import PolicyError
from ..simulator import EPS, Context, Observation
from .base import OnlinePolicy, deadline_rules


class PredictionFree(OnlinePolicy):
    """Price threshold + progress line to ``sigma * d`` + hysteresis (see the module docstring)."""

    name = "prediction_free"

    def __init__(self, theta: float = 0.6, sigma: float = 0.8, hysteresis_h: float | None = None):
        self.theta = theta
        self.sigma = sigma
        self.hysteresis_h = hysteresis_h

    def check_params(self) -> None:
        """Raise `PolicyError` naming the first invalid parameter."""
        theta = _number("theta", self.theta)
        if not (math.isfinite(theta) and theta >= 0):
            raise PolicyError(f"policy 'prediction_free': theta must be a finite number >= 0 (got {self.theta!r})")
        sigma = _number("sigma", self.sigma)
        if not (math.isfinite(sigma) and 0 < sigma <= 1):
            raise PolicyError(f"policy 'prediction_free': sigma must be in (0, 1] (got {self.sigma!r}); "
                              f"the progress line finishes the work by sigma * soft deadline")
        if self.hysteresis_h is not None:
            h = _number("hysteresis_h", self.hysteresis_h)
            if not (math.isfinite(h) and h >= 0):
                raise PolicyError(f"policy 'prediction_free': hysteresis_h must be a finite number >= 0 hours "
                                  f"or None for 2 * overhead (got {self.hysteresis_h!r})")

    def reset(self, ctx: Context) -> None:
        self.check_params()
        super().reset(ctx)
        job = ctx.job
        self.theta_ = float(self.theta)
        self.line_end_h_ = float(self.sigma) * job.deadline_h
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

        # 3. hysteresis: stay on on-demand until the lead is hysteresis_h hours of full-speed work
        intact = obs.held_s == obs.prev_s
        lead_ok = done >= line + self.lead_h_ * job.max_rate - tol
        stay = (obs.held_o > 0) & ~lead_ok
        keep = stay & intact
        retop = stay & ~intact  # the spot part was preempted: re-plan as when behind
        o = np.where(keep, obs.held_o, np.where(retop, full - s_new, o))
        s = np.where(keep, obs.held_s, s)

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


def _number(label: str, value) -> float:
    if isinstance(value, bool):
        raise PolicyError(f"policy 'prediction_free': {label} must be a number (got {value!r})")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise PolicyError(f"policy 'prediction_free': {label} must be a number (got {value!r})") from None
