"""A controlled-error oracle: the true future times (1 + noise), noise growing with the horizon.

For sensitivity sweeps (how much does a scheduler lose per unit of forecast error?) a real model's
error cannot be dialled; this one can. At origin t the forecast of slot t+h is

    truth[t+h] * (1 + eps_h),   eps_h ~ N(0, (sigma * sqrt(h))^2),

so sigma = 0 is perfect foresight and the error of a far slot is larger, as with any real forecast.
The noise is drawn from a generator seeded by (seed, t): the same call gives the same numbers, the
forecast of slot t+h does not depend on the window length w, and different origins get independent
draws. With `cumulative=True` the eps_h are a random walk (sum of h unit-sigma steps: same spread per
horizon, errors correlated across horizons, as real forecasts' are); by default they are independent.

The noise is multiplicative, as the spec asks: a truth of 0 (no GPU, or a zero price) is forecast
exactly. Forecasts are clipped at 0 (prices and GPU counts cannot be negative); `AvailabilityOracle`
also clips to `requested` and rounds to whole GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PredictionError


@dataclass(frozen=True)
class NoisyOracle:
    """truth x (1 + N(0, sigma^2 h)) per horizon h, seeded by (seed, origin)."""

    sigma: float
    seed: int = 0
    cumulative: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.sigma, bool) or not isinstance(self.sigma, (int, float, np.floating)) \
                or not np.isfinite(self.sigma) or self.sigma < 0:
            raise PredictionError(f"oracle: sigma must be a number >= 0 (got {self.sigma!r})")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise PredictionError(f"oracle: seed must be a whole number >= 0 (got {self.seed!r})")

    def noise(self, w: int, t: int) -> np.ndarray:
        """eps_1..eps_w for origin t (deterministic in (seed, t); a prefix does not depend on w)."""
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 0:
            raise PredictionError(f"oracle: origin t must be a slot index >= 0 (got {t!r})")
        z = np.random.default_rng([int(self.seed), int(t)]).standard_normal(w)
        if self.cumulative:
            return self.sigma * np.cumsum(z)
        return self.sigma * np.sqrt(np.arange(1, w + 1)) * z

    def forecast(self, truth_future: np.ndarray, t: int) -> np.ndarray:
        """Forecast of slots t+1..t+w given their true values `truth_future` (length w)."""
        truth = np.asarray(truth_future, dtype=float)
        if truth.ndim != 1:
            raise PredictionError(f"oracle: truth_future must be 1-D (got shape {truth.shape})")
        if truth.size and not np.all(np.isfinite(truth)):
            i = int(np.flatnonzero(~np.isfinite(truth))[0])
            raise PredictionError(f"oracle: truth_future[{i}] (slot {t + 1 + i}) is not a finite number")
        if self.sigma == 0:
            return truth.copy()
        return self._finish(truth * (1.0 + self.noise(truth.size, t)))

    def forecast_at(self, series: np.ndarray, t: int, w: int) -> np.ndarray:
        """Forecast of series[t+1 .. t+w] made at origin t (shorter near the end of the series)."""
        y = np.asarray(series)
        return self.forecast(y[t + 1:t + 1 + w], t)

    def _finish(self, f: np.ndarray) -> np.ndarray:
        return np.maximum(f, 0.0)


@dataclass(frozen=True)
class AvailabilityOracle(NoisyOracle):
    """The availability version: forecasts are whole GPUs in 0..requested."""

    requested: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.requested, bool) or not isinstance(self.requested, (int, np.integer)) or self.requested < 1:
            raise PredictionError(f"oracle: requested must be a whole number >= 1 (got {self.requested!r})")

    def _finish(self, f: np.ndarray) -> np.ndarray:
        return np.clip(np.round(f), 0, self.requested)
