"""A lag-feature regressor: gradient-boosted trees on recent lags, the same slot yesterday and the clock.

One model serves every horizon ("direct" strategy with the horizon as a feature): training rows are
(origin s, horizon h) pairs with s + h inside the history, so nothing after the origin is ever used and
the h-step errors it is trained on are the ones it is judged on. Features of row (s, h):

- h; the last `n_lags` values y[s], y[s-1], ...;
- y at the same slot one day before the target (the seasonal-naive forecast);
- hour of day of the target slot (sin, cos), from `t0` and `slot_hours`;
- min and mean of y over the last day (to tell a dip from a regime).

The target is the change y[s+h] - y[s], so a model that learns nothing forecasts persistence, and the
default loss is absolute error: its forecasts are conditional medians, which is what MAE rewards and
robust to the jumps of availability traces.

On step-like availability, persistence is the MAE-optimal forecast whenever "no change" has probability
above 1/2, and a booster trained on a week of data easily memorises noise (each target slot appears
once per horizon). So each fit is checked in time before it is trusted: the booster is trained on the
rows whose targets fall in the first 1 - `valid_fraction` of the window and scored on the rest; the
number of boosting rounds is the one with the lowest validation loss (0 = persistence), and at each
horizon the model's change is used only if it beats persistence there by `min_gain` and by `z_guard`
block standard errors (`use_model_`); elsewhere the forecast is persistence. The booster is then refitted
on the whole window with that many rounds. Quantiles come from the validation errors per horizon of the
forecast actually used (out of sample, not in-sample residuals).

Horizons beyond `max_horizon` (default 12: two hours at 10-min slots, half a day at 1-h slots) reuse the
h = `max_horizon` model and guard, with the clock and seasonal features of the true target.

scikit-learn's HistGradientBoostingRegressor is used for speed (binned features, ~0.2-0.5 s per fit on a
week of 10-min slots x 12 horizons); its own early stopping stays off because its validation split is
random, not in time, and would let later rows steer the fit.
"""

from __future__ import annotations

from numbers import Integral, Real
import numpy as np

from ..params import Interval, Options, positive_hours
from .base import Predictor, slots_per
from .persistence_guard import beats_persistence

MIN_ORIGINS = 48  # training origins needed beyond the first full day


class GBM(Predictor):
    """Gradient boosting on lags, same slot yesterday, hour of day and last-day min/mean."""

    name = "gbm"

    def __init__(
        self,
        n_lags: int = 6,
        max_horizon: int = 12,
        period_hours: float = 24.0,
        loss: str = "absolute_error",
        max_iter: int = 100,
        learning_rate: float = 0.1,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 40,
        valid_fraction: float = 0.4,
        min_gain: float = 0.02,
        z_guard: float = 1.5,
        random_state: int = 0,
    ) -> None:
        self.n_lags = n_lags
        self.max_horizon = max_horizon
        self.period_hours = period_hours
        self.loss = loss
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.valid_fraction = valid_fraction
        self.min_gain = min_gain
        self.z_guard = z_guard
        self.random_state = random_state

    _parameter_constraints = {
        **{k: [Interval(Integral, 1, None)] for k in ("n_lags", "max_horizon", "max_iter", "min_samples_leaf")},
        "max_leaf_nodes": [Interval(Integral, 2, None)],
        "period_hours": [positive_hours],
        "loss": [Options("absolute_error", "squared_error")],
        "learning_rate": [Interval(Real, 0, 1, closed="right")],
        "valid_fraction": [Interval(Real, 0, 1, closed="neither")],
        "min_gain": [Interval(Real, 0, 1, closed="left")],
        "z_guard": [Interval(Real, 0, None)],
        "random_state": [Interval(Integral, 0, None)],
    }

    def min_history(self, slot_hours: float = 1.0) -> int:
        return max(slots_per(self.period_hours, slot_hours), int(self.n_lags)) + MIN_ORIGINS

    # ------------------------------------------------------------------------------------- features

    def _design(self, y: np.ndarray, s: np.ndarray, h: np.ndarray, dmin: np.ndarray, dmean: np.ndarray) -> np.ndarray:
        m = self.period_
        lags = [y[s - j] for j in range(self.n_lags)]
        same_slot = y[s + h - m * np.ceil(h / m).astype(int)]
        hour = ((self.t0_ + s + h) * self.slot_hours_) % 24.0
        ang = 2 * np.pi * hour / 24.0
        cols = [np.minimum(h, self.max_horizon), *lags, same_slot, dmin, dmean, np.sin(ang), np.cos(ang)]
        return np.column_stack([np.asarray(c, dtype=float) for c in cols])

    def _first_origin(self) -> int:
        return max(self.period_, self.n_lags) - 1

    # ------------------------------------------------------------------------------------------ fit

    def _rows(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Training rows (origin s, horizon h) with s + h in the history; their features and targets."""
        from numpy.lib.stride_tricks import sliding_window_view

        m, n, first = self.period_, y.size, self._first_origin()
        win = sliding_window_view(y, m)  # win[j] = the day ending at slot j + m - 1
        day_min, day_mean = np.full(n, np.nan), np.full(n, np.nan)
        day_min[m - 1:], day_mean[m - 1:] = win.min(axis=1), win.mean(axis=1)
        pairs = [(np.arange(first, n - h), h) for h in range(1, int(self.max_horizon) + 1) if n - h > first]
        s = np.concatenate([p[0] for p in pairs])
        h = np.concatenate([np.full(p[0].size, p[1]) for p in pairs])
        return s, h, self._design(y, s, h, day_min[s], day_mean[s]), y[s + h] - y[s]

    def _booster(self, max_iter: int):
        from sklearn.ensemble import HistGradientBoostingRegressor

        return HistGradientBoostingRegressor(
            loss=self.loss, max_iter=int(max_iter), learning_rate=float(self.learning_rate),
            max_leaf_nodes=int(self.max_leaf_nodes), min_samples_leaf=int(self.min_samples_leaf),
            early_stopping=False, random_state=self.random_state,
        )

    def _fit(self, y: np.ndarray) -> None:
        self.period_ = slots_per(self.period_hours, self.slot_hours_)
        H = int(self.max_horizon)
        s, h, X, target = self._rows(y)
        # Validation in time: rows whose *target* lies in the last `valid_fraction` of the history.
        n_valid = max(1, int(round(self.valid_fraction * (y.size - self._first_origin()))))
        valid = s + h >= y.size - n_valid
        train = ~valid
        self.n_iter_, self.use_model_ = 0, np.zeros(H, dtype=bool)
        hv = h[valid]
        resid = target[valid]  # errors of persistence (a forecast change of 0), kept where the model loses
        if train.sum() >= 2 * self.min_samples_leaf and valid.any():
            booster = self._booster(self.max_iter).fit(X[train], target[train])
            loss = self._loss_fn()
            staged = [np.zeros(int(valid.sum()))] + list(booster.staged_predict(X[valid]))
            scores = [loss(target[valid] - p) for p in staged]
            self.n_iter_ = int(np.argmin(scores))
            if self.n_iter_ > 0:
                best = staged[self.n_iter_]
                sv, tv = s[valid], target[valid]
                for k in range(1, H + 1):
                    at = np.flatnonzero(hv == k)
                    at = at[np.argsort(sv[at], kind="stable")]
                    self.use_model_[k - 1] = beats_persistence(
                        tv[at] - best[at], tv[at], loss, k, self.min_gain, self.z_guard)
                resid = np.where(self.use_model_[hv - 1], target[valid] - best, target[valid])
                if not self.use_model_.any():
                    self.n_iter_ = 0
        self.residuals_ = [resid[hv == k] for k in range(1, H + 1)]
        self.model_ = self._booster(self.n_iter_).fit(X, target) if self.n_iter_ else None

    def _loss_fn(self):
        if self.loss == "absolute_error":
            return lambda e: float(np.mean(np.abs(e)))
        return lambda e: float(np.mean(e**2))

    def _predict(self, w: int) -> np.ndarray:
        y = self.y_
        if self.model_ is None:
            return np.full(w, y[-1])
        m = self.period_
        h = np.arange(1, w + 1)
        day = y[-m:]
        X = self._design(y, np.full(w, y.size - 1), h, np.full(w, day.min()), np.full(w, day.mean()))
        with one_openmp_thread():
            change = self.model_.predict(X)
        use = self.use_model_[np.minimum(h, self.max_horizon) - 1]
        return y[-1] + np.where(use, change, 0.0)

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        H = len(self.residuals_)
        return [self.residuals_[min(h, H) - 1] if h <= H else np.empty(0) for h in range(1, w + 1)]


_CONTROLLER = None


def one_openmp_thread():
    """A context limiting OpenMP to one thread (the booster's): predicting a dozen rows on several OpenMP threads
    costs more in start-up than it saves, and after statsmodels the threads of a fit spin for seconds."""
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="openmp")
