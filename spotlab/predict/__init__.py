"""Forecasting spot availability and prices (SPEC §5): models, rolling evaluation, a noisy oracle.

One small class per model behind the interface of `base.Predictor` (fit on the history up to t,
forecast h = 1..w, quantiles, cheap `update`). `make_predictor("arima", order=(1, 0, 1))` builds one by
name; `evaluate.rolling_origin` scores it without look-ahead; `oracle.NoisyOracle` is the controlled-error
forecast for sensitivity sweeps.
"""

from __future__ import annotations

from typing import Any

from ..errors import PredictionError
from ..registry import build, load_class
from .base import Predictor
from .evaluate import RollingResult, TargetSeries, compare, evaluate_zones, rolling_origin, target_series
from .forecaster import Forecaster
from .oracle import AvailabilityOracle, NoisyOracle

MODELS: dict[str, str] = {
    "persistence": "spotlab.predict.persistence:Persistence",
    "seasonal_naive": "spotlab.predict.seasonal_naive:SeasonalNaive",
    "ets": "spotlab.predict.ets:ETS",
    "arima": "spotlab.predict.arima:ARIMA",
    "gbm": "spotlab.predict.gbm:GBM",
    "duration": "spotlab.predict.duration:Duration",
    "auto": "spotlab.predict.auto:Auto",
}

__all__ = ["MODELS", "AvailabilityOracle", "Forecaster", "NoisyOracle", "Predictor", "RollingResult",
           "TargetSeries", "compare", "evaluate_zones", "make_predictor", "model_names", "predictor_class",
           "rolling_origin", "target_series"]


def model_names() -> list[str]:
    return list(MODELS)


def predictor_class(name: str) -> type[Predictor]:
    return load_class(MODELS, name, "model", PredictionError)


def make_predictor(name: str, **params: Any) -> Predictor:
    """Build a registered model; unknown names, parameters or values give a `PredictionError`.

    String values (from a command line) are converted to the parameter's type: "1,0,1" for a tuple,
    "true"/"false" for a flag, "auto"/"none" for an optional one.
    """
    model = build(predictor_class(name), params, f"model {name!r}", PredictionError)
    model.check_params()
    return model
