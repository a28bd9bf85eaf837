"""A1 — committed horizon control (CHC) over the window problem, fed by a forecaster (SPEC §6).

Every `v` slots (the commitment level) the policy solves the window problem of the next `w` slots from the true
state (`spotlab.optimum.window`): slot t is observed, slots t+1 .. t+w-1 are forecast, and a fluid tail from the
window's end to the hard deadline prices the work left with the spot GPU-hours the market's past leads one to
expect there (`past_tail.py`), on-demand GPU-hours and the job's value by completion time. It commits to the first
v planned allocations. v = 1 (the default) is receding horizon control, v = w fixed horizon control: with real
forecasts a committed plan cannot react to the availability it did not foresee (notebook 05 maps the (w, v)
plane). `averaging=True` is the CHC of Chen et al. (SIGMETRICS 2016): v controllers re-plan at staggered slots
(controller k at t = k mod v) and each slot runs the average of their plans (rounded to whole GPUs).

Forecasts: a registered model (`predictor="arima"`, fitted on the trace before the job's window plus what has
been observed since, refitted every `refit_hours`, updated in between) or the controlled-error oracle
(`predictor="oracle"`, error `sigma`; 0 is perfect foresight); `quantile=q` plans on the GPUs available with
probability q. The tail comes from the past for a real model, from the oracle's forecast of its own slots for the
oracle (`tail="auto"`; "past" gives the oracle the past's tail). Why each part of the design [ours]:
- a tail, not a terminal value, which priced the work left too cheaply so the plan deferred it; conditioned on the
  window's last slot, since spot comes in regimes; work per GPU-hour by the concave envelope of H; still fluid
  (whole GPUs, switches and the net only in the window): docs/decisions/chc-tail.md, docs/decisions/chc-oracle-tail.md;
- spot discounted by the restarts it took in the past (`restart_share`), blocks losing the hours restarts stall,
  spot below N_min a dearer tier: docs/decisions/chc-restart-discount.md, docs/decisions/chc-mixed-tier.md;
- work beyond what window and tail can do is priced (`shortfall_price`) and the net's margin is not the tail's, so
  a plan that cannot finish still works now: docs/decisions/chc-net-margin.md;
- with the net's give-up the plan may stop where the net would take the job over, never in the tail, deciding at
  the true prices; a job no price could make pay stops at once: docs/decisions/chc-give-up.md;
- `restart_reserve` (on): a job with a value, before a tail read from the past, is valued `reserve_h` hours late,
  room for restarts persistence does not show (not used to decide a stop): docs/decisions/chc-restart-reserve.md;
- `urgency = 0.1`: spot expected later is worth less than spot in hand, so while the plan leans on a tail, spot in
  the window's first slot looks 10% cheaper (0 at its end) and on-demand 10% dearer (before a forecast tail it is
  bought earlier instead); off for a whole-job window on exact forecasts, where the plan is the optimum; a 1%
  tie-break on other forecasts: docs/decisions/chc-urgency.md.

Window problems are solved to a 1% gap: the plan is only as good as its forecasts. `method="auto"` uses the DP of
`spotlab.optimum.window_dp` (proven within the gap, in milliseconds) and leaves to the MILP (`solver`) jobs of
negative value and windows it cannot prove; "milp" is the MILP alone, "dp" the DP alone
(docs/decisions/window-solver.md). The problem is always feasible, so a solver error is a `PolicyError`, never
hidden; a time limit without any schedule falls back to Uniform Progress for that slot. `report()` gives the solves,
their times and `fallback_rate` (also in the simulator's metrics). Plans respect the simulator's safety net.
"""

from __future__ import annotations

import math
import time
from numbers import Integral, Real
from typing import Any, Callable

import numpy as np

from ..errors import PolicyError, PredictionError, SolverError
from ..params import Boolean, Interval, Options, positive_hours
from ..optimum.window import METHODS, WindowProblem
from ..optimum.window_types import TailForecast, WindowState
from ..predict.forecaster import Forecaster
from ..predict.registry import make_predictor, model_names
from ..predict.oracle import AvailabilityOracle, NoisyOracle
from ..simulation.interface import Context, Observation
from .base import OnlinePolicy
from .past_tail import block_hours, past_tails, restart_share, restart_slots, tiers
from .uniform_progress import UniformProgress


# the timing bias on forecast window slots with no tail after them (docs/decisions/chc-urgency.md)
WINDOW_TIE_BREAK = 0.01
# where the tail's spot comes from: "auto" (the oracle's future with predictor="oracle", else the past), the
# past ("past"), or the oracle's forecast of the slots after the window ("oracle")
TAILS = ("auto", "past", "oracle")
# A window or commitment past the hard deadline plans slots where nothing can run, and tail blocks beyond one per
# slot are empty: both are cut to the job's horizon in slots (blocks never below this default), so that w=100000
# costs neither gigabytes nor minutes and plans what w=horizon plans.
DEFAULT_BLOCKS = 24


class CHC(OnlinePolicy):
    """Committed horizon control: plan w slots ahead from forecasts, commit to the first v."""

    name = "chc"

    def __init__(
        self,
        w: int = 12,
        v: int = 1,
        predictor: str = "arima",
        sigma: float = 0.0,
        quantile: float | None = None,
        averaging: bool = False,
        urgency: float = 0.1,
        tail: str = "auto",
        restart_reserve: bool = True,
        refit_hours: float = 24.0,
        train_hours: float = 168.0,
        blocks: int = DEFAULT_BLOCKS,
        method: str = "auto",
        solver: str = "glpk",
        time_limit: float = 5.0,
        mip_gap: float = 1e-2,
        seed: int = 0,
    ) -> None:
        self.w = w
        self.v = v
        self.predictor = predictor
        self.sigma = sigma
        self.quantile = quantile
        self.averaging = averaging
        self.urgency = urgency
        self.tail = tail
        self.restart_reserve = restart_reserve
        self.refit_hours = refit_hours
        self.train_hours = train_hours
        self.blocks = blocks
        self.method = method
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.seed = seed

    # ------------------------------------------------------------------------------------- checks

    _parameter_constraints = {
        "w": [Interval(Integral, 1, None)],
        "v": [Interval(Integral, 1, None)],
        "predictor": [lambda p: "" if p == "oracle" or p in model_names()
                      else f"'oracle' or one of {', '.join(model_names())}"],
        "sigma": [Interval(Real, 0, None)],
        "quantile": [None, Interval(Real, 0, 1, closed="neither")],
        "averaging": [Boolean()],
        "urgency": [Interval(Real, 0, 1, closed="left")],
        "tail": [Options(*TAILS)],
        "restart_reserve": [Boolean()],
        "refit_hours": [positive_hours],
        "train_hours": [positive_hours],
        "blocks": [Interval(Integral, 0, None)],
        "method": [Options(*METHODS)],
        "solver": [Options("glpk", "highs")],
        "time_limit": [Interval(Real, 0, None, closed="neither")],
        "mip_gap": [Interval(Real, 0, 1, closed="left")],
        "seed": [Interval(Integral, 0, None)],
    }
    _parameter_help = {
        "w": "look-ahead window in slots (one past the job's hard deadline is cut there)",
        "v": "commitment: slots executed from each plan before replanning (at most w)",
        "predictor": "forecasting model (spotlab forecast --model names) or oracle",
        "sigma": "the oracle's forecast error, sigma*sqrt(h) at h slots ahead (0: perfect foresight)",
        "quantile": "plan on the GPUs available with this probability (None: the mean forecast)",
        "averaging": "Chen et al.'s CHC: v staggered controllers averaged",
        "urgency": "share of the price by which spot taken now (on-demand bought later) looks cheaper while the "
                   "plan leans on the tail",
        "tail": "what the fluid tail after the window reads: auto (the oracle's forecast for the oracle, the past "
                "otherwise), past or oracle",
        "restart_reserve": "value a job as many hours late as restarts at the past's rate would take to the soft "
                           "deadline, before a tail read from the past",
        "refit_hours": "hours between refits of the forecaster",
        "train_hours": "hours of history each forecaster fit uses",
        "blocks": "at most this many time blocks model the tail from the end of the window to the hard deadline "
                  "(more than one per slot of the job are cut, never below 24)",
        "method": "window problems: auto (the dynamic programme, the MILP where it does not apply), dp or milp",
        "solver": "MILP solver: glpk or highs",
        "time_limit": "seconds per solve; a time-out keeps the best schedule found (its gap is reported)",
        "mip_gap": "relative optimality gap at which a solve stops",
        "seed": "the policy's random seed (the same as --seed)",
    }

    def _check_together(self) -> None:
        if self.v > self.w:
            raise PolicyError(f"chc: the commitment level v={self.v} cannot exceed the window w={self.w}")
        if self.sigma and self.predictor != "oracle":
            raise PolicyError("chc: sigma is the error of predictor='oracle'; a real model has its own error")
        if self.tail == "oracle" and self.predictor != "oracle":
            raise PolicyError("chc: tail='oracle' reads the future, so it needs predictor='oracle'; "
                              "a real model's tail comes from the past (tail='past' or 'auto')")

    # -------------------------------------------------------------------------------------- reset

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        ep, job = ctx.episodes, ctx.job
        self.dt_ = ep.slot_hours
        horizon = max(1, int(ctx.horizon))
        self.w_ = min(int(self.w), horizon)
        self.v_ = min(int(self.v), self.w_)
        self.problem_ = WindowProblem(job, self.w_, self.dt_, min(int(self.blocks), max(horizon, DEFAULT_BLOCKS)))
        n_ctrl = self.v_ if self.averaging else 1
        W, span = ep.n, ctx.horizon + self.w_ + 1
        self.plan_o_ = np.full((n_ctrl, W, span), -1, dtype=np.int64)
        self.plan_s_ = np.full((n_ctrl, W, span), -1, dtype=np.int64)
        self.fallback_ = UniformProgress()
        self.fallback_.reset(ctx)
        self.requested_ = np.maximum(1, np.nanmax(ep.avail, axis=1)).astype(int)
        if ep.history_avail is not None:
            self.requested_ = np.maximum(self.requested_, np.nan_to_num(np.nanmax(
                np.where(np.isfinite(ep.history_avail), ep.history_avail, 0), axis=1)).astype(int))
        self.forecasters_: dict[tuple[int, str], dict[str, Any]] = {}
        self.past_: dict[tuple[int, str], np.ndarray | None] = {}
        self.stats_ = {"solves": 0, "solves_dp": 0, "solve_s": [], "fallbacks": 0, "decisions": 0, "time_limit": 0,
                       "no_schedule": 0, "forecast_s": 0.0, "fit_failures": 0}
        self.base_seed_ = int(ctx.seed) * 1_000_003 + int(self.seed)

    # --------------------------------------------------------------------------------- forecasts

    def _past(self, i: int, target: str) -> np.ndarray | None:
        """The gap-free end of window i's history before the job (None: no history), kept for the run: every slot
        of every window reads it."""
        key = (i, target)
        if key not in self.past_:
            ep = self.ctx_.episodes
            past = ep.history_avail if target == "availability" else ep.history_price
            before = None
            if past is not None:
                before = past[i]
                gaps = np.flatnonzero(~np.isfinite(before))
                before = before[gaps[-1] + 1:] if gaps.size else before  # the gap-free tail only
            self.past_[key] = before
        return self.past_[key]

    def _history(self, i: int, t: int, target: str, last: int | None = None) -> np.ndarray:
        """What was observed of `target` in window i up to slot t, its history before the job first; with `last`,
        only the last `last` values."""
        ep = self.ctx_.episodes
        now = ep.avail[i, :t + 1] if target == "availability" else ep.spot_price[i, :t + 1]
        before = self._past(i, target)
        if last is not None:
            if before is None or now.size >= last:
                return np.array(now[-last:], dtype=float)
            before = before[max(0, before.size - (last - now.size)):]
        if before is None:
            return np.array(now, dtype=float)
        return np.concatenate([before, np.asarray(now, dtype=float)])

    def _model_forecast(self, i: int, t: int, target: str, k: int) -> np.ndarray:
        """h = 1..k forecasts of `target` for window i at origin t, from the registered model."""
        y = self._history(i, t, target)
        if np.ptp(y) == 0:  # a constant history (a count trace's fixed price, an always-full zone)
            return np.full(k, y[-1])
        key = (i, target)
        st = self.forecasters_.get(key)
        refit = max(1, int(round(self.refit_hours / self.dt_)))
        train = max(1, int(round(self.train_hours / self.dt_)))
        if st is None or t - st["fit_t"] >= refit:
            model = make_predictor(self.predictor)
            requested = int(self.requested_[i]) if target == "availability" else None
            fc = Forecaster(model, target, requested)
            lo = max(0, y.size - train)
            try:
                fc.fit(y[lo:], t0=0, slot_hours=self.dt_)
            except PredictionError:
                self.stats_["fit_failures"] += 1  # too little history yet: hold the last value
                return np.full(k, y[-1])
            st = {"fc": fc, "fit_t": t, "seen": y.size}
            self.forecasters_[key] = st
        elif y.size > st["seen"]:
            st["fc"].update(y[st["seen"]:])
            st["seen"] = y.size
        fc = st["fc"]
        if target == "availability" and self.quantile is not None:
            return fc.predict_quantile(k, self.quantile)
        return fc.predict(k)

    def _oracle_forecast(self, i: int, t: int, target: str, k: int) -> np.ndarray:
        ep = self.ctx_.episodes
        series = ep.avail[i] if target == "availability" else ep.spot_price[i]
        truth = np.asarray(series[t + 1:t + 1 + k], dtype=float)
        if not np.isfinite(truth).all():  # (nan_to_num's own call costs more than the forecast: only where needed)
            truth = np.nan_to_num(truth, nan=0.0)
        if truth.size < k:  # past the end of the trace: nothing can run there anyway
            truth = np.concatenate([truth, np.full(k - truth.size, truth[-1] if truth.size else 0.0)])
        seed = (self.base_seed_ * 7919 + i * 2 + (target == "price")) % (2**63)
        if target == "availability":
            f = AvailabilityOracle(float(self.sigma), seed, requested=int(self.requested_[i])).forecast(truth, t)
            if self.quantile is not None and self.sigma > 0:  # the oracle's own q-assured value
                z = abs(_normal_quantile(self.quantile))
                f = np.floor(np.clip(truth * (1 - z * self.sigma * np.sqrt(np.arange(1, k + 1))), 0, None))
            return f
        return NoisyOracle(float(self.sigma), seed).forecast(truth, t)

    def forecast(self, i: int, t: int, obs: Observation) -> tuple[np.ndarray, np.ndarray]:
        """Availability and spot price of window i for slots t..t+w-1 (slot t observed)."""
        k = self.w_ - 1
        tic = time.perf_counter()
        a, p = np.array([float(obs.avail[i])]), np.array([float(obs.spot_price[i])])
        if k:
            get = self._oracle_forecast if self.predictor == "oracle" else self._model_forecast
            a = np.concatenate([a, get(i, t, "availability", k)])
            p = np.concatenate([p, np.maximum(get(i, t, "price", k), 0.0)])
        self.stats_["forecast_s"] += time.perf_counter() - tic
        return a, p

    # ------------------------------------------------------------------------------------------ act

    def _plans(self, windows: np.ndarray, t: int, obs: Observation) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """The plans (o, s) of `windows` from slot t, None for a window whose solve timed out without a schedule;
        their window problems are solved together (`WindowProblem.solve_many`: the DP of all at once)."""
        ep, w = self.ctx_.episodes, self.w_
        problems = []
        for i in windows:
            i = int(i)
            a, p = self.forecast(i, t, obs)
            od_row = ep.od_price[i]
            od = np.asarray(od_row[t:t + w], dtype=float)
            if od.size < w or not np.all(np.isfinite(od)):
                last = od_row[np.isfinite(od_row)][-1]
                od = np.concatenate([od[np.isfinite(od)], np.full(w, last)])[:w]
            state = WindowState(time_h=float(obs.time_h), remaining=float(obs.remaining[i]),
                                prev_o=int(obs.prev_o[i]), prev_s=int(obs.prev_s[i]), pending_h=float(obs.pending_h[i]))
            problems.append({"state": state, "avail": a, "spot_price": p, "od_price": od,
                             "reserve_h": self._reserve(i, t, state.time_h)})
        # the tail's blocks start where the windows end: the same for every window of the slot
        bounds = self.problem_.tail_for(problems[0]["state"]) if problems else np.zeros(0)
        tails = self._tails([int(i) for i in windows], t, bounds, [float(pr["od_price"][-1]) for pr in problems],
                            [pr["avail"] for pr in problems])
        for problem, tail in zip(problems, tails):
            problem["tail"] = tail
        got = self.problem_.solve_many(problems, slots_left=self.ctx_.horizon - t, solver=self.solver,
                                       time_limit=float(self.time_limit), mip_gap=float(self.mip_gap),
                                       urgency=float(self.urgency), must_finish=not self.ctx_.give_up,
                                       net=self.ctx_.safety_net, method=self.method,
                                       window_urgency=self._window_urgency())
        out: list = []
        for i, plan in zip(windows, got):
            if isinstance(plan, SolverError):  # the window problem is always feasible: a failure is a bug
                raise PolicyError(f"chc: window {int(i)}, slot {t}: {plan}") from None
            if plan is None:  # time limit without a schedule: counted, reported as the fallback rate
                self.stats_["no_schedule"] += 1
                out.append(None)
                continue
            self.stats_["solves"] += 1
            self.stats_["solves_dp"] += plan.method == "dp"
            self.stats_["solve_s"].append(plan.seconds)
            self.stats_["time_limit"] += plan.status != "optimal"
            out.append((plan.o, plan.s))
        return out

    def _tail_source(self) -> str:
        """"past" or "oracle": what the tail's spot is read from (`tail`, with "auto" resolved)."""
        if self.tail == "auto":
            return "oracle" if self.predictor == "oracle" else "past"
        return self.tail

    def _reserve(self, i: int, t: int, time_h: float) -> float:
        """Hours before the soft deadline the plan keeps for restarts it cannot place: the share of a spot hour
        that the past's restarts took (`restart_share`), times the hours left to the soft deadline. Only while the
        plan reads the rest of the job from the past (a forecast tail places its own restarts), and only for a job
        with a value (a cost-only job loses nothing by finishing late, before the hard deadline)."""
        job = self.job
        if not self.restart_reserve or job.value <= 0 or self._tail_source() != "past":
            return 0.0
        left = job.deadline_h - float(time_h)
        if left <= 0:
            return 0.0
        return (1.0 - self._useful_share(self._recent(i, t, "availability"))) * left

    def _recent(self, i: int, t: int, target: str) -> np.ndarray:
        """The last `train_hours` observed of `target` (the history before the job included): the past that the
        tail and the reserve read."""
        return self._history(i, t, target, last=max(1, int(round(self.train_hours / self.dt_))))

    def _useful_share(self, avail: np.ndarray) -> float:
        """`restart_share` of a job following the spot of `avail` (GPUs; not finite: none), up to N_max."""
        a = np.where(np.isfinite(avail), avail, 0.0)
        return restart_share(np.where(a > 0, np.minimum(a, self.job.n_max), 0.0), self.dt_, self.job.overhead_h)

    def _window_urgency(self) -> float:
        """The timing bias once the window reaches the job's end: none on exact forecasts, a tie-break else."""
        exact = self.predictor == "oracle" and not self.sigma
        return 0.0 if exact else min(float(self.urgency), WINDOW_TIE_BREAK)

    def _tails(self, windows: list[int], t: int, bounds: np.ndarray, od: list[float],
               window_avail: list[np.ndarray]) -> list[TailForecast | None]:
        """Per window, the expected spot GPU-hours and prices in each tail block (`bounds`), from the last
        `train_hours` observed (the history before the job included) and the window's own last slot
        (`past_tail.past_tails`: every window at once), or from the oracle's forecast of the tail's own slots
        (`tail`; `_oracle_tail`). Certainty-equivalent on purpose: the plan is re-solved every slot, so what the
        tail promises and the market does not deliver is re-planned, on-demand included, before the deadline."""
        if bounds.size < 2:
            return [None] * len(windows)
        dt = self.dt_
        first = int(math.floor(bounds[0] / dt + 1e-9))
        last = int(math.ceil(bounds[-1] / dt - 1e-9))
        ahead = np.arange(first, last) - t  # slots ahead of now (>= w)
        if self._tail_source() == "oracle":
            return [self._oracle_tail(i, t, bounds, ahead, o) for i, o in zip(windows, od)]
        seen = np.nan_to_num(np.array([np.asarray(wa, dtype=float)[-1] for wa in window_avail]), nan=0.0)
        return past_tails(self.job, [self._recent(i, t, "availability") for i in windows],
                          [self._recent(i, t, "price") for i in windows], bounds, ahead, self.w_ - 1, dt,
                          seen, np.array(od))

    def _oracle_tail(self, i: int, t: int, bounds: np.ndarray, ahead: np.ndarray, od: float) -> TailForecast:
        """The tail of window i from the oracle's forecast of the tail's own slots (`ahead` of now, never empty:
        the blocks span time), in the same two tiers as the past's (`past_tail`), with the forecast's restarts
        and prices block by block (`_forecast_tail`)."""
        job, dt = self.job, self.dt_
        k = ahead
        first = int(k[0]) + t
        a = self._oracle_forecast(i, t, "availability", int(k[-1]))[k - 1]
        p = self._oracle_forecast(i, t, "price", int(k[-1]))[k - 1]
        a, p, pure, mixed = tiers(job, a, p)
        edges = np.arange(first, first + k.size + 1) * dt

        def per_block(cap: np.ndarray) -> np.ndarray:  # GPU-hours of each block
            return block_hours(cap[None, :], bounds, edges, dt)[0]

        return self._forecast_tail(bounds, per_block, a, p, pure, mixed, od)

    def _forecast_tail(self, bounds: np.ndarray, per_block: Callable[[np.ndarray], np.ndarray], a: np.ndarray,
                       p: np.ndarray, pure: np.ndarray, mixed: np.ndarray, od: float) -> TailForecast:
        """The tail of a slot-by-slot forecast (the oracle's): each block loses the restart overhead of the
        spells that start, change or end in it (`restart_slots`), and pays the forecast's prices there. Why
        not the tail-wide share of the past's tail: a forecast says where spot flickers, and a block of one-hour
        spells is worth less than a block of steady spot; averaged over the tail, the plan bought on-demand where
        the optimum waited for steady spot, or waited for flickering spot it then paid restarts on."""
        job, dt = self.job, self.dt_
        held = np.where(pure + mixed > 0, np.minimum(a, job.n_max), 0.0)
        lost = np.minimum(restart_slots(held) * float(job.overhead_h), dt)  # hours each slot stands still
        keep = 1.0 - lost / dt
        spot_hours, mixed_hours = per_block(pure * keep), per_block(mixed * keep)
        price = np.where(np.isfinite(p), p, od)
        paid = per_block(pure * price)  # $ for the whole hours, restarts included
        blend = per_block(np.where(mixed > 0, a * price + (job.n_min - a) * od, 0.0))

        def per_useful_hour(cost: np.ndarray, hours: np.ndarray) -> np.ndarray:
            return np.where(hours > 1e-12, cost / np.maximum(hours, 1e-12), od)  # no capacity: any price

        return TailForecast(hours=np.diff(bounds), spot_gpu_hours=spot_hours,
                            spot_price=per_useful_hour(paid, spot_hours), od_price=np.full(bounds.size - 1, od),
                            stalled_hours=per_block(np.where(held > 0, lost / dt, 0.0)),
                            mixed_gpu_hours=mixed_hours, mixed_price=per_useful_hour(blend, mixed_hours),
                            forecast=True)

    def act(self, obs: Observation):
        t, v = obs.t, self.v_
        W = obs.remaining.size
        n_ctrl = self.plan_o_.shape[0]
        for c in range(n_ctrl):
            if (t - c) % v != 0 or t < c:
                continue
            windows = np.flatnonzero(obs.active)
            for i, plan in zip(windows, self._plans(windows, t, obs)):
                if plan is None:
                    self.plan_o_[c, i, t:t + v] = -1
                    self.plan_s_[c, i, t:t + v] = -1
                else:
                    self.plan_o_[c, i, t:t + v] = plan[0][:v]
                    self.plan_s_[c, i, t:t + v] = plan[1][:v]
        po, ps = self.plan_o_[:, :, t], self.plan_s_[:, :, t]
        have = po >= 0
        count = have.sum(axis=0)
        o = np.zeros(W, dtype=np.int64)
        s = np.zeros(W, dtype=np.int64)
        ok = count > 0
        if ok.any():
            mean_o = np.where(have, po, 0).sum(axis=0) / np.maximum(count, 1)
            mean_s = np.where(have, ps, 0).sum(axis=0) / np.maximum(count, 1)
            o = np.where(ok, np.round(mean_o), 0).astype(np.int64)
            s = np.where(ok, np.round(mean_s), 0).astype(np.int64)
            total = o + s
            over = total > self.job.n_max
            o = np.where(over, self.job.n_max - s, o)
        missing = obs.active & ~ok
        self.stats_["decisions"] += int(obs.active.sum())
        if missing.any():
            self.stats_["fallbacks"] += int(missing.sum())
            fo, fs = self.fallback_.act(obs)
            o = np.where(missing, fo, o)
            s = np.where(missing, fs, s)
        return o, s

    def report(self) -> dict:
        st = getattr(self, "stats_", None)
        if not st:
            return {}
        secs = np.asarray(st["solve_s"], dtype=float)
        return {
            "solves": int(st["solves"]),
            "solves_dp": int(st["solves_dp"]),
            "solve_mean_s": float(secs.mean()) if secs.size else 0.0,
            "solve_median_s": float(np.median(secs)) if secs.size else 0.0,
            "solve_p90_s": float(np.percentile(secs, 90)) if secs.size else 0.0,
            "solve_max_s": float(secs.max()) if secs.size else 0.0,
            "solve_total_s": float(secs.sum()),
            "time_limit_hits": int(st["time_limit"]),
            "time_limit_no_schedule": int(st["no_schedule"]),
            "fallback_slots": int(st["fallbacks"]),
            "fallback_rate": float(st["fallbacks"] / max(1, st["decisions"])),
            "forecast_s": float(st["forecast_s"]),
            "fit_failures": int(st["fit_failures"]),
        }


def _normal_quantile(q: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(q))
