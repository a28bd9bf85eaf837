"""Exponential smoothing (additive Holt-Winters): level, optional trend, optional daily season.

statsmodels' `holtwinters.ExponentialSmoothing` estimates the smoothing parameters and the initial
states (its Cython optimiser takes ~10-40 ms even with a 144-slot season). The states are then run
forward here with the standard recursions (Hyndman & Athanasopoulos, FPP, §8.3), the same ones
statsmodels uses, so that

- `update` is O(new slots): the fitted parameters are re-used and only the states move on (statsmodels'
  Holt-Winters results have no `append`; re-running its filter with fixed parameters costs ~2-8 ms and
  grows with the history);
- the in-sample h-step forecasts from every past origin are available at once, and give the
  per-horizon residual quantiles.

Defaults, and why:

- trend off: availability and prices are bounded and mean-reverting; a fitted trend turns the last jump
  into a runaway slope at long horizons. When turned on it is undamped unless `damped_trend=True`.
- seasonal off: on the real probe traces the daily cycle is weak and a daily term initialised from two
  days of step-like data cost 20-50% MAE against plain smoothing. `seasonal=True` adds an additive daily
  term (the history must then hold two full days: statsmodels' heuristic initialisation needs two
  cycles, and estimating 144 initial seasonal states at 10-min slots by likelihood would be slow).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import PredictionError
from ..params import Boolean, positive_hours
from .base import Predictor, slots_per

MIN_NONSEASONAL = 10


class ETS(Predictor):
    """Additive Holt-Winters smoothing; falls back to persistence on a constant history."""

    name = "ets"
    needs_variation = True

    def __init__(
        self,
        trend: bool = False,
        damped_trend: bool = False,
        seasonal: bool = False,
        period_hours: float = 24.0,
    ) -> None:
        self.trend = trend
        self.damped_trend = damped_trend
        self.seasonal = seasonal
        self.period_hours = period_hours

    _parameter_constraints = {"trend": [Boolean()], "damped_trend": [Boolean()], "seasonal": [Boolean()],
                              "period_hours": [positive_hours]}

    def _check_together(self) -> None:
        if self.damped_trend and not self.trend:
            raise PredictionError("ets: damped_trend=True needs trend=True")

    def min_history(self, slot_hours: float = 1.0) -> int:
        if self.seasonal:
            return max(MIN_NONSEASONAL, 2 * slots_per(self.period_hours, slot_hours))
        return MIN_NONSEASONAL

    # ------------------------------------------------------------------------------------------ fit

    def _fit(self, y: np.ndarray) -> None:
        from statsmodels.tsa.holtwinters import ExponentialSmoothing

        m = slots_per(self.period_hours, self.slot_hours_)
        seasonal = bool(self.seasonal)
        if seasonal and m < 2:
            raise PredictionError(f"ets: a season of {m} slot cannot be modelled; use seasonal=False")
        self.period_ = m if seasonal else 0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = ExponentialSmoothing(
                    y,
                    trend="add" if self.trend else None,
                    damped_trend=bool(self.damped_trend),
                    seasonal="add" if seasonal else None,
                    seasonal_periods=m if seasonal else None,
                    initialization_method="heuristic" if seasonal else "estimated",
                ).fit()
        except (ValueError, np.linalg.LinAlgError) as exc:
            self.fallback_ = f"estimation failed ({exc}); forecasting persistence"
            return
        p = res.params

        def get(key: str, default: float) -> float:
            v = p.get(key, default)
            return default if v is None or not np.isfinite(v) else float(v)

        self.alpha_ = get("smoothing_level", 0.0)
        self.beta_ = get("smoothing_trend", 0.0) if self.trend else 0.0
        self.gamma_ = get("smoothing_seasonal", 0.0) if seasonal else 0.0
        self.phi_ = get("damping_trend", 1.0) if self.damped_trend else 1.0
        level0 = get("initial_level", float(y[0]))
        trend0 = get("initial_trend", 0.0) if self.trend else 0.0
        seasons0 = np.asarray(p.get("initial_seasons"), dtype=float) if seasonal else np.zeros(0)
        self.level_, self.slope_, self.season_ = _smooth(
            y, self.alpha_, self.beta_, self.gamma_, self.phi_, level0, trend0, seasons0
        )

    def _update(self, y_new: np.ndarray) -> None:
        m = self.period_
        level, slope, season = _smooth(
            y_new, self.alpha_, self.beta_, self.gamma_, self.phi_,
            self.level_[-1], self.slope_[-1], self.season_[-m:] if m else np.zeros(0),
        )
        self.level_ = np.concatenate([self.level_, level[1:]])
        self.slope_ = np.concatenate([self.slope_, slope[1:]])
        if m:
            self.season_ = np.concatenate([self.season_, season[m:]])

    # ------------------------------------------------------------------------------------- forecast

    def _damped_sum(self, h: np.ndarray) -> np.ndarray:
        """phi + phi^2 + ... + phi^h (= h without damping)."""
        if self.phi_ == 1.0:
            return h.astype(float)
        return self.phi_ * (1 - self.phi_ ** h) / (1 - self.phi_)

    def _season_index(self, origin_state: np.ndarray | int, h: np.ndarray) -> np.ndarray:
        """Index into `season_` of the season of slot origin+h; state i has seen y[..i-1]."""
        m = self.period_
        return origin_state - 1 + h - m * ((h - 1) // m)

    def _forecast_from(self, i: np.ndarray | int, h: np.ndarray) -> np.ndarray:
        f = self.level_[i] + self._damped_sum(h) * self.slope_[i]
        if self.period_:
            f = f + self.season_[self._season_index(i, h)]
        return f

    def _predict(self, w: int) -> np.ndarray:
        return self._forecast_from(self.y_.size, np.arange(1, w + 1))

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        n = self.y_.size
        out = []
        for h in range(1, w + 1):
            i = np.arange(1, n - h + 1)  # state after y[i-1]; its h-step forecast is of y[i-1+h]
            out.append(self.y_[i - 1 + h] - self._forecast_from(i, np.full(i.size, h)) if i.size else np.empty(0))
        return out


def _smooth(
    y: np.ndarray, alpha: float, beta: float, gamma: float, phi: float,
    level0: float, trend0: float, seasons0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Additive Holt-Winters states. level[i], trend[i] have seen y[..i-1] (level[0] = initial);
    season[j] is the seasonal term of slot j (the first m are the initial ones)."""
    n, m = y.size, seasons0.size
    level = np.empty(n + 1)
    trend = np.empty(n + 1)
    season = np.empty(n + m) if m else np.zeros(0)
    level[0], trend[0] = level0, trend0
    if m:
        season[:m] = seasons0
    lv, tr = float(level0), float(trend0)
    yy = y.tolist()
    for i in range(1, n + 1):
        obs = yy[i - 1]
        base = lv + phi * tr
        s_old = season[i - 1] if m else 0.0
        new_lv = alpha * (obs - s_old) + (1 - alpha) * base
        tr = beta * (new_lv - lv) + (1 - beta) * phi * tr
        if m:
            season[i + m - 1] = gamma * (obs - base) + (1 - gamma) * s_old
        lv = new_lv
        level[i], trend[i] = lv, tr
    return level, trend, season
