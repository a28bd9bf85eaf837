"""A predictor bound to a target: availability (whole GPUs in 0..requested) or price (>= 0).

Models forecast plain numbers; a scheduler needs numbers that can happen. `Forecaster` clips point
forecasts to the feasible range and turns quantiles into *assured* values:

- availability, probability q: the number of GPUs one can count on with probability q, i.e. the model's
  (1 - q)-quantile, clipped to [0, requested] and rounded down (a fraction of a GPU cannot be held);
- price, probability q: the price that will not be exceeded with probability q, the q-quantile, >= 0.

So q = 0.9 is on the safe side for both: fewer GPUs than the median, a higher price than the median.

Point forecasts of availability are left fractional by default (a mean, which RMSE rewards, is not a
whole number); `round_point=True` rounds them to whole GPUs, which usually lowers MAE (the MAE-optimal
forecast of a count is a whole number, its median).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PredictionError
from .base import Predictor, as_history, check_level

TARGETS = ("availability", "price")


class Forecaster:
    """Wrap `model` for `target`; `requested` caps availability forecasts (None: no upper cap)."""

    def __init__(self, model: Predictor, target: str = "availability", requested: int | None = None,
                 round_quantiles: bool = True, round_point: bool = False) -> None:
        if target not in TARGETS:
            raise PredictionError(f"unknown target {target!r}; use one of {', '.join(TARGETS)}")
        if requested is not None:
            if isinstance(requested, bool) or not isinstance(requested, (int, np.integer)) or requested < 1:
                raise PredictionError(f"requested must be a whole number of GPUs >= 1 (got {requested!r})")
            if target == "price":
                raise PredictionError("requested applies to availability forecasts only")
        if not isinstance(model, Predictor):
            raise PredictionError(f"model must be a Predictor (got {type(model).__name__})")
        self.model = model
        self.target = target
        self.requested = None if requested is None else int(requested)
        self.round_quantiles = round_quantiles
        self.round_point = round_point

    def __repr__(self) -> str:
        return f"Forecaster({self.model!r}, target={self.target!r}, requested={self.requested!r})"

    def _check_range(self, y: np.ndarray, t0: int) -> None:
        bad = np.flatnonzero(y < 0) if self.requested is None else np.flatnonzero((y < 0) | (y > self.requested))
        if bad.size:
            i = int(bad[0])
            rng = ">= 0" if self.requested is None else f"in 0..{self.requested}"
            raise PredictionError(f"{self.target}: slot {t0 + i} is {y[i]:g}, expected a value {rng}")

    def fit(self, y: Any, t0: int = 0, slot_hours: float = 1.0) -> "Forecaster":
        self.model.fit(y, t0=t0, slot_hours=slot_hours)
        self._check_range(self.model.y_, self.model.t0_)
        return self

    def update(self, y_new: Any) -> "Forecaster":
        self.model._check_fitted()
        t = self.model.t0_ + self.model.y_.size
        arr = as_history(y_new, t, self.model.name, allow_empty=True)
        self._check_range(arr, t)
        self.model.update(arr)
        return self

    def _clip(self, f: np.ndarray) -> np.ndarray:
        upper = self.requested if self.target == "availability" else None
        return np.clip(f, 0.0, upper)

    def predict(self, w: int) -> np.ndarray:
        """Point forecasts for h = 1..w, within the feasible range (whole GPUs if `round_point`)."""
        f = self._clip(self.model.predict(w))
        return np.round(f) if self.round_point and self.target == "availability" else f

    def predict_quantile(self, w: int, q: float) -> np.ndarray:
        """Forecasts achieved with probability q: availability >= value, price <= value (see module doc)."""
        q = check_level(q)
        if self.target == "availability":
            f = self._clip(self.model.predict_quantile(w, 1.0 - q))
            return np.floor(f + 1e-9) if self.round_quantiles else f
        return self._clip(self.model.predict_quantile(w, q))
