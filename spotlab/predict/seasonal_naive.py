"""Seasonal naive: the value at the same time one period (a day) earlier.

The right baseline when demand follows the clock (busy afternoons); on step-like availability with a
weak daily cycle it loses to persistence, which is itself a finding.
"""

from __future__ import annotations

import numpy as np

from ..params import positive_hours
from .base import Predictor, slots_per


class SeasonalNaive(Predictor):
    """Forecast y[t+h] = y[t+h-k*m], m = slots per period, k = ceil(h/m) (the latest observed season)."""

    name = "seasonal_naive"

    def __init__(self, period_hours: float = 24.0) -> None:
        self.period_hours = period_hours

    _parameter_constraints = {"period_hours": [positive_hours]}

    def min_history(self, slot_hours: float = 1.0) -> int:
        return slots_per(self.period_hours, slot_hours)

    def _fit(self, y: np.ndarray) -> None:
        self.period_ = slots_per(self.period_hours, self.slot_hours_)

    def _lags(self, w: int) -> np.ndarray:
        h = np.arange(1, w + 1)
        return self.period_ * np.ceil(h / self.period_).astype(int)

    def _predict(self, w: int) -> np.ndarray:
        n = self.y_.size
        return self.y_[n - 1 + np.arange(1, w + 1) - self._lags(w)]

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        y = self.y_
        return [y[k:] - y[:-k] if y.size > k else np.empty(0) for k in self._lags(w)]
