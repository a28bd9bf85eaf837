"""A1 across zones — committed horizon control whose window problem chooses the zone and the allocation (SPEC §6, §9).

Every `v` slots, and at once when the plan meets a zone without the spot it counted on, the policy forecasts every
zone's availability and prices from now to the hard deadline and solves the zones DP (`spotlab.optimum.dp.zones`)
from the job's true state (zone, allocation, overhead left, work done): so the plan weighs moves, egress, restarts
and the final zone's prices under the run's rules exactly as the hindsight optimum does, on forecasts instead of
the future. It commits to the first `v` slots of the plan. With `predictor="oracle"` the forecasts are the future
and the plan is the optimum from the state it is in.

What a zone's forecast is fitted on: the zone's past before the window, then the slots of the window the policy has
seen there — every zone every slot where the rules show availability for free, otherwise only the zones it ran or
launched in (a zone not seen since is taken to be as it was last seen). Prices are public: every zone's are known
to now. Availability forecasts are whole GPUs: the mean forecast rounded, or with `quantile=q` the number
available with probability q.
"""

from __future__ import annotations

import time
from numbers import Integral, Real

import numpy as np

from ..errors import PredictionError, SolverError
from ..market.zoned_episodes import ZonedEpisodes
from ..optimum.dp.zones import ZonesDP, final_zone_order
from ..params import Interval, positive_hours
from ..predict.forecaster import Forecaster
from ..predict.registry import make_predictor, model_names
from ..simulation.interface import Action, Context, Observation
from ..simulation.slots import horizon_slots
from .base import OnlinePolicy


class CHCZones(OnlinePolicy):
    """Plan zones and allocations to the deadline on per-zone forecasts; commit to the first v slots."""

    name = "chc_zones"
    independent_windows = True
    reads_history = True

    def __init__(self, v: int = 12, predictor: str = "persistence", price_predictor: str = "persistence",
                 quantile: float | None = None, train_hours: float = 168.0, recheck_hours: float = 1.0) -> None:
        self.v = v
        self.predictor = predictor
        self.price_predictor = price_predictor
        self.quantile = quantile
        self.train_hours = train_hours
        self.recheck_hours = recheck_hours

    _parameter_constraints = {
        "v": [Interval(Integral, 1, None)],
        "predictor": [lambda p: "" if p == "oracle" or p in model_names()
                      else f"'oracle' or one of {', '.join(model_names())}"],
        "price_predictor": [lambda p: "" if p == "oracle" or p in model_names()
                            else f"'oracle' or one of {', '.join(model_names())}"],
        "quantile": [None, Interval(Real, 0, 1, closed="neither")],
        "train_hours": [positive_hours],
        "recheck_hours": [positive_hours],
    }
    _parameter_help = {
        "v": "commitment: slots executed from each plan before replanning (sooner where spot is not as planned)",
        "predictor": "availability forecasts per zone (spotlab forecast --model names) or oracle (the future)",
        "price_predictor": "spot price forecasts per zone, or oracle",
        "quantile": "plan on the GPUs available with this probability (None: the mean forecast, rounded)",
        "train_hours": "hours of a zone's history each forecast is fitted on",
        "recheck_hours": "a zone not seen for this long is taken to have spot again, until a launch shows otherwise",
    }

    def reset(self, ctx: Context) -> None:
        super().reset(ctx)
        zoned = ctx.zoned
        if zoned is None:  # one zone: the same plan, with nowhere to move
            zoned = ZonedEpisodes((ctx.episodes,), ("zone",), ("zone",))
        self.zoned_ = zoned
        self.dt_ = zoned.slot_hours
        self.T_ = min(int(ctx.horizon), horizon_slots(ctx.job, self.dt_))
        self.dp_ = ZonesDP(ctx.job, self.T_, self.dt_, ctx.settings, zoned.regions,
                           keep_net=ctx.safety_net)
        W, Z = zoned.n, zoned.z
        self.final_pricing_ = ctx.settings.pricing == "final_zone_first_slot"
        self.free_moves_ = ctx.settings.moves == "free"
        self.seen_ = np.full((W, Z, self.T_), np.nan)  # availability seen in the window (NaN: not seen)
        self.first_prices_: list[tuple[np.ndarray, np.ndarray] | None] = [None] * W
        self.final_zone_ = np.full(W, -1, dtype=np.int64)
        self.started_ = np.zeros(W, dtype=bool)
        self.plan_zone_ = np.full((W, self.T_ + 1), -1, dtype=np.int64)
        self.plan_o_ = np.zeros((W, self.T_ + 1), dtype=np.int64)
        self.plan_s_ = np.zeros((W, self.T_ + 1), dtype=np.int64)
        self.next_plan_ = np.zeros(W, dtype=np.int64)
        self.requested_ = int(ctx.job.n_max)
        self.stats_ = {"solves": 0, "solve_s": 0.0, "forecast_s": 0.0, "replans_on_surprise": 0,
                       "fallbacks": 0, "decisions": 0}

    # --------------------------------------------------------------------------------- forecasts

    def _history(self, i: int, z: int, t: int) -> np.ndarray:
        """Zone z's availability before the window (its gap-free tail) and as seen in the window up to slot t,
        a slot not seen taking the value last seen."""
        ep = self.zoned_.zones[z]
        seen = self.seen_[i, z, :t + 1]
        past = ep.history_avail[i] if ep.history_avail is not None else np.empty(0)
        bad = np.flatnonzero(~np.isfinite(past))
        past = past[bad[-1] + 1:] if bad.size else past
        y = np.concatenate([past, seen])
        known = np.isfinite(y)
        if not known.any():
            return np.zeros(0)
        first = int(np.argmax(known))
        y = y[first:]
        idx = np.where(np.isfinite(y), np.arange(y.size), 0)
        np.maximum.accumulate(idx, out=idx)
        return y[idx]

    def _fit_predict(self, name: str, target: str, y: np.ndarray, k: int) -> np.ndarray:
        if np.ptp(y) == 0:
            return np.full(k, y[-1])
        train = max(2, int(round(self.train_hours / self.dt_)))
        fc = Forecaster(make_predictor(name), target, self.requested_ if target == "availability" else None)
        try:
            fc.fit(y[-train:], t0=0, slot_hours=self.dt_)
        except PredictionError:
            return np.full(k, y[-1])  # too little history yet: hold the last value
        if target == "availability" and self.quantile is not None:
            return fc.predict_quantile(k, self.quantile)
        return fc.predict(k)

    def forecast(self, i: int, t: int, obs: Observation, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Availability, spot and on-demand prices of every zone for slots t .. t+n-1 of window i, (Z, n) each.
        A zone not seen for `recheck_hours` in the window (or never, without a past) is taken to have spot: the plan
        goes to find out, by a launch that is free where it fails."""
        zoned, Z = self.zoned_, self.zoned_.z
        _, sp_now, od_now = self._zones_of(obs)
        A = np.zeros((Z, n))
        SP = np.zeros((Z, n))
        OD = np.zeros((Z, n))
        for z in range(Z):
            ep = zoned.zones[z]
            if self.predictor == "oracle":
                A[z] = _padded(ep.avail[i, t:t + n], n)
            else:
                y = self._history(i, z, t)
                seen = np.flatnonzero(np.isfinite(self.seen_[i, z, :t + 1]))
                stale = (t - seen[-1] if seen.size else t + 1) * self.dt_ > self.recheck_hours
                if not y.size or (stale and t > 0):
                    A[z] = self.requested_
                else:
                    A[z, 0] = y[-1]
                    if n > 1:
                        A[z, 1:] = self._fit_predict(self.predictor, "availability", y, n - 1)
            SP[z, 0], OD[z, 0] = sp_now[z, i], od_now[z, i]
            if n > 1:
                if self.price_predictor == "oracle":
                    SP[z, 1:] = _padded(ep.spot_price[i, t + 1:t + n], n - 1)
                else:
                    past = ep.spot_price[i, :t + 1]
                    SP[z, 1:] = np.maximum(self._fit_predict(self.price_predictor, "price", past, n - 1), 0.0)
                OD[z, 1:] = _padded(ep.od_price[i, t + 1:t + n], n - 1)  # list prices, known ahead
        A = np.floor(A + 1e-9) if self.quantile is not None else np.round(A)
        return np.clip(A, 0, self.requested_).astype(np.int64), SP, OD

    # ------------------------------------------------------------------------------------------ act

    @staticmethod
    def _zones_of(obs: Observation) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The job's zone and every zone's prices, (W,), (Z, W), (Z, W); one zone's own where there is one."""
        W = obs.active.size
        if obs.zone is None:
            return np.zeros(W, dtype=np.int64), obs.spot_price[None, :], obs.od_price[None, :]
        return obs.zone, obs.zones_spot_price, obs.zones_od_price

    def _observe(self, obs: Observation) -> None:
        t = obs.t
        if t >= self.T_:
            return
        W = obs.active.size
        zone, sp, od = self._zones_of(obs)
        if obs.zones_avail is not None:
            self.seen_[:, :, t] = obs.zones_avail.T
        else:
            self.seen_[np.arange(W), zone, t] = obs.avail
        self.started_ |= obs.prev_o + obs.prev_s > 0
        if t == 0:
            for i in range(W):
                self.first_prices_[i] = (sp[:, i].copy(), od[:, i].copy())

    def _surprised(self, i: int, t: int, obs: Observation) -> bool:
        """The plan counts on spot in a zone that is seen not to have it now."""
        k, z = int(self.plan_s_[i, t]), int(self.plan_zone_[i, t])
        if k <= 0 or z < 0:
            return False
        seen = self.seen_[i, z, t] if t < self.T_ else np.nan
        return bool(np.isfinite(seen) and seen < k)

    def _plan(self, i: int, t: int, obs: Observation) -> None:
        n = self.T_ - t
        tic = time.perf_counter()
        A, SP, OD = self.forecast(i, t, obs, n)
        self.stats_["forecast_s"] += time.perf_counter() - tic
        dp, job = self.dp_, self.job
        zone = int(self._zones_of(obs)[0][i])
        start = dp.start_at(t, zone, obs.held_o[i], obs.held_s[i], obs.prev_s[i], self.started_[i], obs.pending_h[i],
                            job.work - obs.remaining[i])
        tic = time.perf_counter()
        try:
            if self.final_pricing_:
                if self.final_zone_[i] < 0:
                    sp0, od0 = self.first_prices_[i]
                    self.final_zone_[i] = final_zone_order(dp, sp0[:, None], od0[:, None])[0]
                f, first = int(self.final_zone_[i]), self.first_prices_[i]
                if self.free_moves_:
                    plan = dp.solve_free_moves(A, SP, OD, f, start=start, first_prices=first)
                else:
                    plan = dp.solve_window(A, SP, OD, final_zone=f, start=start, first_prices=first)
            else:
                plan = dp.solve_window(A, SP, OD, start=start)
        except SolverError:
            plan = None
        self.stats_["solves"] += 1
        self.stats_["solve_s"] += time.perf_counter() - tic
        if plan is None:  # no plan finishes on these forecasts: on demand here this slot, plan again next
            self.stats_["fallbacks"] += 1
            self.plan_zone_[i, t], self.plan_o_[i, t], self.plan_s_[i, t] = zone, job.n_max, 0
            self.next_plan_[i] = t + 1
            return
        m = len(plan.zone)
        self.plan_zone_[i, t:t + m] = plan.zone
        self.plan_o_[i, t:t + m] = plan.o
        self.plan_s_[i, t:t + m] = plan.s
        self.next_plan_[i] = t + int(self.v)

    def _launch_check(self, i: int, t: int, obs: Observation) -> bool:
        """Where the plan launches spot in a zone whose availability now is not seen, try the launch (a failed
        one is free, as the rules' `first_spot` says) and note what it showed; True if it failed."""
        k, z = int(self.plan_s_[i, t]), int(self.plan_zone_[i, t])
        if k <= 0 or z < 0 or np.isfinite(self.seen_[i, z, t]) or obs.first_spot is None:
            return False
        order = np.full((obs.active.size, 1), -1, dtype=np.int64)
        order[i, 0] = z
        found = int(obs.first_spot(order)[i]) == z
        self.seen_[i, z, t] = self.requested_ if found else 0.0
        return not found

    def act(self, obs: Observation):
        t = obs.t
        self._observe(obs)
        for i in np.flatnonzero(obs.active):
            i = int(i)
            if t >= self.T_:
                continue
            due = t >= self.next_plan_[i]
            if not due and self._surprised(i, t, obs):
                self.stats_["replans_on_surprise"] += 1
                due = True
            for _ in range(self.zoned_.z + 1):  # each failed launch shows one more zone without spot
                if due:
                    self._plan(i, t, obs)
                due = self._launch_check(i, t, obs)
                if not due:
                    break
        self.stats_["decisions"] += int(obs.active.sum())
        tt = min(t, self.T_)
        zone = self.plan_zone_[:, tt]
        o = np.where(zone >= 0, self.plan_o_[:, tt], 0)
        s = np.where(zone >= 0, self.plan_s_[:, tt], 0)
        if obs.zone is None:
            return o.astype(np.int64), s.astype(np.int64)
        to = np.where(zone >= 0, zone, obs.zone)
        return Action(o.astype(np.int64), s.astype(np.int64), None, to.astype(np.int64))

    def report(self) -> dict:
        st = getattr(self, "stats_", None)
        if not st:
            return {}
        return {"solves": int(st["solves"]), "solve_total_s": float(st["solve_s"]),
                "forecast_s": float(st["forecast_s"]), "replans_on_surprise": int(st["replans_on_surprise"]),
                "fallback_rate": float(st["fallbacks"] / max(1, st["decisions"]))}


def _padded(x: np.ndarray, n: int) -> np.ndarray:
    """`x` as n values, NaN as 0 (nothing to be had past a trace's end), the last value repeated past it."""
    x = np.nan_to_num(np.asarray(x, dtype=float), nan=0.0)
    if x.size >= n:
        return x[:n]
    return np.concatenate([x, np.full(n - x.size, x[-1] if x.size else 0.0)])
