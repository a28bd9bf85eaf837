"""Forecasting spot availability and prices (SPEC §5): models, rolling evaluation, a noisy oracle.

One small class per model behind the interface of `base.Predictor` (fit on the history up to t,
forecast h = 1..w, quantiles, cheap `update`). `make_predictor("arima", order=(1, 0, 1))` builds one by
name; `evaluate.rolling_origin` scores it without look-ahead; `oracle.NoisyOracle` is the controlled-error
forecast for sensitivity sweeps.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from ..errors import PredictionError
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
}

__all__ = ["MODELS", "AvailabilityOracle", "Forecaster", "NoisyOracle", "Predictor", "RollingResult",
           "TargetSeries", "compare", "evaluate_zones", "make_predictor", "model_names", "predictor_class",
           "rolling_origin", "target_series"]


def model_names() -> list[str]:
    return list(MODELS)


def predictor_class(name: str) -> type[Predictor]:
    if name not in MODELS:
        raise PredictionError(f"unknown model {name!r}; known models: {', '.join(MODELS)}")
    module, cls = MODELS[name].split(":")
    return getattr(importlib.import_module(module), cls)


def _coerce(value: Any, annotation: Any, default: Any, key: str, name: str) -> Any:
    """Turn a command-line string into the parameter's type (from its annotation or default)."""
    if not isinstance(value, str):
        return value
    ann = str(annotation) if annotation is not inspect.Parameter.empty else type(default).__name__
    text = value.strip()
    try:
        if "None" in ann and text.lower() in ("none", "auto", ""):
            return None
        if "tuple" in ann:
            return tuple(int(v) for v in text.strip("()[] ").split(",") if v.strip())
        if "bool" in ann:
            low = text.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if "int" in ann:
            return int(text)
        if "float" in ann:
            return float(text)
    except ValueError:
        raise PredictionError(f"model {name!r}: parameter {key}={value!r} is not a valid {ann}") from None
    return value


def make_predictor(name: str, **params: Any) -> Predictor:
    """Build a registered model; unknown names, parameters or values give a `PredictionError`.

    String values (from a command line) are converted to the parameter's type: "1,0,1" for a tuple,
    "true"/"false" for a flag, "auto"/"none" for an optional one.
    """
    cls = predictor_class(name)
    sig = inspect.signature(cls.__init__)
    accepted = {k: p for k, p in sig.parameters.items()
                if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [k for k in params if k not in accepted]
    if unknown:
        valid = ", ".join(f"{k}={p.default!r}" for k, p in accepted.items()) or "none"
        raise PredictionError(
            f"model {name!r} has no parameter {', '.join(map(repr, unknown))}; its parameters (defaults): {valid}"
        )
    kwargs = {k: _coerce(v, accepted[k].annotation, accepted[k].default, k, name) for k, v in params.items()}
    model = cls(**kwargs)
    model.check_params()
    return model
