"""The predictor interface: fit on the history up to slot t, forecast slots t+1..t+w (SPEC §5).

Conventions follow scikit-learn: parameters are set in `__init__` and not touched by `fit`; what is
learned lives in attributes ending in `_`. Every model shares the same life cycle:

- `fit(y, t0, slot_hours)`: `y` is the history up to and including the origin slot; `t0` is the
  absolute index of `y[0]` (slot t starts `t * slot_hours` hours after a midnight, which is how the
  hour-of-day features are derived) and `slot_hours` tells how many slots make a day.
- `update(y_new)`: the next observations arrive; the model conditions on them *without* re-estimating
  its parameters (that is what makes rolling evaluation cheap between refits).
- `predict(w)`: point forecasts for h = 1..w; `predict_quantile(w, q)`: the q-quantile of the forecast
  distribution (P(y <= value) ~ q), from in-sample h-step errors unless the model has its own intervals.

Input rules, the same for every model, so that a user gets one kind of answer:

- gaps: a NaN (or inf) anywhere is a `PredictionError` naming the absolute slot. Models do not guess
  how to fill a gap; fill it first (holding the last value is what `spotlab.market.market.resample` does).
- too little history: `PredictionError` saying how many slots the model needs (`min_history`).
- constant history (a zone that always grants every GPU is common): models that estimate a noise
  variance (ETS, ARIMA) cannot fit it and fall back to persistence, which is the exact forecast of a
  constant series; `fallback_` says why and the next `fit` starts afresh. The others handle it natively.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ..errors import PredictionError
from ..params import Params

MIN_RESIDUALS = 5  # fewer in-sample errors than this at a horizon -> borrow the spread of a shorter one


def check_slot_hours(slot_hours: float) -> float:
    try:
        s = float(slot_hours)
    except (TypeError, ValueError):
        raise PredictionError(f"slot_hours must be a number of hours > 0 (got {slot_hours!r})") from None
    if not (math.isfinite(s) and s > 0):
        raise PredictionError(f"slot_hours must be a number of hours > 0 (got {slot_hours!r})")
    return s


def slots_per(hours: float, slot_hours: float) -> int:
    """Whole slots in `hours` (a day is 144 ten-minute slots); at least 1."""
    return max(1, int(round(float(hours) / check_slot_hours(slot_hours))))


def check_horizon(w: Any) -> int:
    """A forecast window must be a whole number of slots >= 1."""
    if isinstance(w, (bool, np.bool_)) or not isinstance(w, (int, np.integer)):
        if isinstance(w, (float, np.floating)) and float(w).is_integer() and w >= 1:
            return int(w)
        raise PredictionError(f"forecast window w must be a whole number of slots >= 1 (got {w!r})")
    if w < 1:
        raise PredictionError(f"forecast window w must be >= 1 slot (got {w})")
    return int(w)


def check_level(q: Any) -> float:
    try:
        qf = float(q)
    except (TypeError, ValueError):
        raise PredictionError(f"quantile level must be a number strictly between 0 and 1 (got {q!r})") from None
    if not (0.0 < qf < 1.0):
        raise PredictionError(f"quantile level must be strictly between 0 and 1 (got {q!r})")
    return qf


def as_history(y: Any, t0: int = 0, who: str = "predictor", allow_empty: bool = False) -> np.ndarray:
    """`y` as a finite 1-D float array; a gap (NaN/inf) is an error naming its absolute slot."""
    try:
        arr = np.array(y, dtype=float)
    except (TypeError, ValueError):
        raise PredictionError(f"{who}: the series must be numbers (got {type(y).__name__})") from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise PredictionError(f"{who}: the series must be 1-D (got shape {arr.shape})")
    if arr.size == 0 and not allow_empty:
        raise PredictionError(f"{who}: empty history; a forecast needs at least one observed slot")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        what = "NaN (a gap)" if np.isnan(arr[i]) else f"{arr[i]}"
        raise PredictionError(
            f"{who}: slot {int(t0) + i} is {what}; {bad.size} non-finite value(s) in the history. "
            "Fill gaps before forecasting (e.g. hold the last observed value)."
        )
    return arr


def persistence_errors(y: np.ndarray, w: int) -> list[np.ndarray]:
    """In-sample errors of the last-value forecast at h = 1..w: y[t+h] - y[t]."""
    return [y[h:] - y[:-h] if y.size > h else np.empty(0) for h in range(1, w + 1)]


def residual_quantiles(sorted_errors: list[np.ndarray], q: float) -> np.ndarray:
    """Per-horizon q-quantile of forecast errors, each horizon's errors sorted ascending (a rolling evaluation
    asks two or three levels of the same errors at every origin: sorting once is ~10x cheaper than
    `np.quantile` per level and horizon).

    A horizon with fewer than MIN_RESIDUALS errors borrows the quantile of the longest horizon that has
    enough, scaled by sqrt(h / h_ref) (a random-walk spread); with none at all the spread is zero.
    """
    out = np.zeros(len(sorted_errors))
    ref_h, ref_q = 0, 0.0
    for i, e in enumerate(sorted_errors):
        h = i + 1
        if e.size >= MIN_RESIDUALS:
            ref_h, ref_q = h, linear_quantile(e, q)
            out[i] = ref_q
        elif ref_h:
            out[i] = ref_q * math.sqrt(h / ref_h)
    return out


def linear_quantile(sorted_values: np.ndarray, q: float) -> float:
    """`np.quantile(values, q)` (its default, linear method) of values sorted ascending, with numpy's exact
    arithmetic (a + (b - a) * g, or b - (b - a) * (1 - g) from g = 0.5 on), so the numbers are the same."""
    n = sorted_values.size
    virtual = (n - 1) * q
    if virtual >= n - 1:
        return float(sorted_values[-1])
    if virtual < 0:
        return float(sorted_values[0])
    lo = math.floor(virtual)
    g = virtual - lo
    a, b = float(sorted_values[lo]), float(sorted_values[lo + 1])
    diff = b - a
    return b - diff * (1 - g) if g >= 0.5 else a + diff * g


class Predictor(Params):
    """Base class: validation, the fit/update/predict life cycle and the default quantiles.

    Subclasses implement `_fit(y)`, `_predict(w)` and `_insample_errors(w)` (or `_predict_quantile`),
    optionally `_update(y_new)` (default: nothing to do, the model reads `y_` when it predicts) and
    `min_history(slot_hours)`. Set `needs_variation = True` when a constant history cannot be fitted.
    """

    name: ClassVar[str] = "predictor"
    needs_variation: ClassVar[bool] = False
    param_error = PredictionError  # `check_params` (called by `fit` and `make_predictor`) raises it

    def min_history(self, slot_hours: float = 1.0) -> int:
        """Fewest slots of history `fit` accepts at this slot length."""
        return 1

    # ----------------------------------------------------------------------------------- life cycle

    def fit(self, y: Any, t0: int = 0, slot_hours: float = 1.0) -> "Predictor":
        """Learn from `y` = history up to and including the origin; `t0` = absolute index of `y[0]`."""
        self.check_params()
        slot_hours = check_slot_hours(slot_hours)
        if isinstance(t0, (bool, np.bool_)) or not isinstance(t0, (int, np.integer)) or t0 < 0:
            raise PredictionError(f"{self.name}: t0 must be a slot index >= 0 (got {t0!r})")
        arr = as_history(y, t0, self.name)
        need = self.min_history(slot_hours)
        if arr.size < need:
            raise PredictionError(
                f"{self.name}: needs at least {need} slots of history ({need * slot_hours:g} h at "
                f"{slot_hours:g}-h slots), got {arr.size}"
            )
        self.y_ = arr
        self.t0_ = int(t0)
        self.slot_hours_ = slot_hours
        self.fallback_: str | None = None
        self._memo_ = {}  # forecasts of the current state; emptied by every fit and update
        if self.needs_variation and np.ptp(arr) == 0:
            self.fallback_ = "constant history: forecasting the constant (persistence)"
        else:
            self._fit(arr)
        return self

    def update(self, y_new: Any) -> "Predictor":
        """Append newly observed slots; the fitted parameters are kept (no re-estimation)."""
        self._check_fitted()
        new = as_history(y_new, self.t0_ + self.y_.size, self.name, allow_empty=True)
        if new.size:
            self.y_ = np.concatenate([self.y_, new])
            self._memo_ = {}
            if self.fallback_ is None:
                self._update(new)
        return self

    def predict(self, w: int) -> np.ndarray:
        """Point forecasts of the next `w` slots (h = 1..w)."""
        self._check_fitted()
        w = check_horizon(w)
        if self.fallback_ is not None:
            return np.full(w, self.y_[-1])
        if ("point", w) not in self._memo_:  # asked again by every quantile level of the same origin
            self._memo_["point", w] = np.asarray(self._predict(w), dtype=float)
        return self._memo_["point", w].copy()

    def predict_quantile(self, w: int, q: float) -> np.ndarray:
        """The q-quantile of the forecast of each of the next `w` slots (non-decreasing in q)."""
        self._check_fitted()
        w, q = check_horizon(w), check_level(q)
        if self.fallback_ is not None:
            return np.full(w, self.y_[-1]) + residual_quantiles(self._sorted_errors(w, fallback=True), q)
        return np.asarray(self._predict_quantile(w, q), dtype=float)

    def _sorted_errors(self, w: int, fallback: bool = False) -> list[np.ndarray]:
        """The in-sample h-step errors (h = 1..w), each sorted, computed once per state of the model."""
        key = ("errors", w, fallback)
        if key not in self._memo_:
            errors = persistence_errors(self.y_, w) if fallback else self._insample_errors(w)
            self._memo_[key] = [np.sort(e) for e in errors]
        return self._memo_[key]

    # ------------------------------------------------------------------------------ for subclasses

    def _fit(self, y: np.ndarray) -> None:
        raise NotImplementedError

    def _update(self, y_new: np.ndarray) -> None:
        """Default: the model forecasts from `self.y_`, already extended."""

    def _predict(self, w: int) -> np.ndarray:
        raise NotImplementedError

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        raise NotImplementedError

    def _predict_quantile(self, w: int, q: float) -> np.ndarray:
        return self.predict(w) + residual_quantiles(self._sorted_errors(w), q)

    def _check_fitted(self) -> None:
        if not hasattr(self, "y_"):
            raise PredictionError(f"{self.name}: call fit(history) before update/predict")
