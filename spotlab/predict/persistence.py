"""Persistence: the last observed value, for every horizon; the baseline any model must beat.

Availability traces are step functions (long flat runs broken by jumps), so persistence is hard to beat
at short horizons; its in-sample h-step errors y[t+h] - y[t] also give honest quantiles.
"""

from __future__ import annotations

import numpy as np

from .base import Predictor, persistence_errors


class Persistence(Predictor):
    """Forecast y[t+h] = y[t] for every h."""

    name = "persistence"

    def __init__(self) -> None:
        pass

    def _fit(self, y: np.ndarray) -> None:
        pass

    def _predict(self, w: int) -> np.ndarray:
        return np.full(w, self.y_[-1])

    def _insample_errors(self, w: int) -> list[np.ndarray]:
        return persistence_errors(self.y_, w)
