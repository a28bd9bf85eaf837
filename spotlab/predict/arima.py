"""(Seasonal) ARIMA, estimated by statsmodels, then run as a Kalman filter with the fitted matrices.

statsmodels (`tsa.arima.model.ARIMA`, exact Gaussian likelihood in state-space form) estimates the
parameters. The fitted state-space system (Z, d, H, T, c, RQR') and the filter's last predicted state are
then kept, so that

- `update` is one Kalman step per new slot with the fitted parameters: exactly what statsmodels'
  `results.extend`/`append` compute (tested), but ~50 us instead of ~5 ms of model construction;
- `predict_quantile` uses the model's own Gaussian intervals (mean +- z_q * forecast s.e.).

A refit of the same object starts the optimiser from the previous parameters (`warm_start`): they move
little between daily refits, which saves some optimiser iterations (~10% of a 0.1-0.4 s fit on a week of
10-min slots; benchmarks/bench_predict.py measures it). The forecasts then depend on earlier fits too,
never on later data.

Defaults, and why: order (2, 1, 2), no constant. Availability traces are step functions: a differenced
model forecasts "the last level plus a short-lived correction", which on the real traces had a 5-20%
lower MAE than the mean-reverting (1, 0, 1) or (2, 0, 1) with a constant (those pull every forecast
towards the window mean, which MAE punishes on long flat runs); two AR and MA lags catch the alternating
patterns some probe traces show. Undifferenced orders get a constant.

Seasonal ARIMA (`seasonal=True`, SAR(1) at lag one day by default) is allowed only up to
MAX_SEASONAL_PERIOD slots per day: the state grows with the period, and at 144 ten-minute slots per day
each likelihood evaluation filters a ~150-dimensional state, which makes a fit take minutes. Use 1-h
(or 30-min) slots for seasonal ARIMA, or seasonal_naive / ets / gbm for a daily term at 10-min slots.
On a constant history, or when estimation fails, the model falls back to persistence (`fallback_`).
"""

from __future__ import annotations

from numbers import Integral
import warnings
from functools import lru_cache

import numpy as np

from ..errors import PredictionError
from ..params import Boolean, Interval, positive_hours
from .base import Predictor, slots_per

MAX_SEASONAL_PERIOD = 48


def _is_order(x: object, n: int = 3) -> bool:
    return (isinstance(x, (tuple, list)) and len(x) == n
            and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0 for v in x))


class ARIMA(Predictor):
    """ARIMA(p, d, q) [x (P, D, Q) per day] with a constant when undifferenced."""

    name = "arima"
    needs_variation = True

    def __init__(
        self,
        order: tuple[int, int, int] = (2, 1, 2),
        seasonal: bool = False,
        seasonal_order: tuple[int, int, int] = (1, 0, 0),
        period_hours: float = 24.0,
        warm_start: bool = True,
        maxiter: int = 50,
    ) -> None:
        self.order = order
        self.seasonal = seasonal
        self.seasonal_order = seasonal_order
        self.period_hours = period_hours
        self.warm_start = warm_start
        self.maxiter = maxiter

    _parameter_constraints = {
        "order": [lambda v: "" if _is_order(v) else "three whole numbers >= 0, (p, d, q)"],
        "seasonal_order": [lambda v: "" if _is_order(v) else "three whole numbers >= 0, (P, D, Q)"],
        "seasonal": [Boolean()],
        "period_hours": [positive_hours],
        "warm_start": [Boolean()],
        "maxiter": [Interval(Integral, 1, None)],
    }

    def _check_together(self) -> None:
        if sum(self.order) == 0 and not (self.seasonal and sum(self.seasonal_order)):
            raise PredictionError("arima: order (0, 0, 0) is just the mean; give at least one AR, MA or difference term")

    def _period(self, slot_hours: float) -> int:
        m = slots_per(self.period_hours, slot_hours)
        if self.seasonal and m > MAX_SEASONAL_PERIOD:
            raise PredictionError(
                f"arima: seasonal ARIMA with {m} slots per period is too slow (the state grows with the period; "
                f"at most {MAX_SEASONAL_PERIOD}); use slot_hours >= {self.period_hours / MAX_SEASONAL_PERIOD:g}, "
                "or seasonal_naive / ets / gbm for a daily term"
            )
        if self.seasonal and m < 2:
            raise PredictionError(f"arima: a season of {m} slot cannot be modelled; use seasonal=False")
        return m

    def min_history(self, slot_hours: float = 1.0) -> int:
        p, d, q = self.order
        need = 10 + 3 * (p + d + q)
        if self.seasonal:
            P, D, Q = self.seasonal_order
            need += (2 + P + D + Q) * self._period(slot_hours)
        return need

    @property
    def _trend(self) -> str:
        return "c" if self.order[1] == 0 and (not self.seasonal or self.seasonal_order[1] == 0) else "n"

    # ------------------------------------------------------------------------------------------ fit

    def _fit(self, y: np.ndarray) -> None:
        from statsmodels.tsa.arima.model import ARIMA as SMARIMA

        m = self._period(self.slot_hours_)
        seasonal_order = (*self.seasonal_order, m) if self.seasonal else (0, 0, 0, 0)
        start = getattr(self, "params_", None) if self.warm_start else None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = SMARIMA(y, order=tuple(self.order), seasonal_order=seasonal_order, trend=self._trend)
                if start is not None and len(start) != len(model.start_params):
                    start = None
                # cov_type="none": no standard errors (never used), which saves the numerical Hessian: the same
                # parameters and filter, a fit ~2.7x faster
                res = model.fit(start_params=start, method_kwargs={"maxiter": int(self.maxiter)}, cov_type="none")
        except (ValueError, np.linalg.LinAlgError) as exc:
            self.fallback_ = f"estimation failed ({exc}); forecasting persistence"
            return
        fr = res.filter_results
        for key in ("obs_intercept", "state_intercept"):
            arr = getattr(fr, key)
            if arr.shape[-1] > 1 and not np.allclose(arr, arr[..., :1]):
                raise PredictionError(f"arima: time-varying {key} is not supported (trend={self._trend!r})")
        if not np.all(np.isfinite(res.params)):
            self.fallback_ = "estimation gave non-finite parameters; forecasting persistence"
            return
        self.params_ = np.asarray(res.params, dtype=float)
        self.result_ = res
        self.Z_ = fr.design[0, :, 0].copy()
        self.d_ = float(fr.obs_intercept[0, -1])
        self.H_ = float(fr.obs_cov[0, 0, 0])
        self.T_ = fr.transition[:, :, 0].copy()
        self.c_ = fr.state_intercept[:, -1].copy()
        R = fr.selection[:, :, 0]
        self.RQR_ = R @ fr.state_cov[:, :, 0] @ R.T
        self.state_ = fr.predicted_state[:, -1].copy()
        self.state_cov_ = fr.predicted_state_cov[:, :, -1].copy()

    def _update(self, y_new: np.ndarray) -> None:
        a, P = self.state_, self.state_cov_
        Z, T = self.Z_, self.T_
        for obs in y_new:
            PZ = P @ Z
            F = float(Z @ PZ) + self.H_
            v = obs - (float(Z @ a) + self.d_)
            K = (T @ PZ) / F
            a = T @ a + self.c_ + K * v
            P = T @ P @ T.T + self.RQR_ - np.outer(K, K) * F
            P = 0.5 * (P + P.T)
        self.state_, self.state_cov_ = a, P

    # ------------------------------------------------------------------------------------- forecast

    def _moments(self, w: int) -> tuple[np.ndarray, np.ndarray]:
        """Forecast means and variances, h = 1..w: one pass of the filter per model state, shared by the point
        forecast and every quantile level (kept in the base class's per-state memo)."""
        if ("moments", w) in self._memo_:
            return self._memo_["moments", w]
        a, P = self.state_, self.state_cov_
        mean, var = np.empty(w), np.empty(w)
        for i in range(w):
            mean[i] = float(self.Z_ @ a) + self.d_
            var[i] = float(self.Z_ @ P @ self.Z_) + self.H_
            a = self.T_ @ a + self.c_
            P = self.T_ @ P @ self.T_.T + self.RQR_
        self._memo_["moments", w] = mean, np.maximum(var, 0.0)
        return self._memo_["moments", w]

    def _predict(self, w: int) -> np.ndarray:
        return self._moments(w)[0]

    def _predict_quantile(self, w: int, q: float) -> np.ndarray:
        mean, var = self._moments(w)
        return mean + _normal_quantile(q) * np.sqrt(var)


@lru_cache(maxsize=64)
def _normal_quantile(q: float) -> float:
    """The standard normal's q-quantile, once per level: a rolling evaluation asks for the same one or two
    levels at every origin, and scipy's distribution machinery costs more than the forecast itself there."""
    from scipy.stats import norm

    return float(norm.ppf(q))
