"""The forecasting models by name: one line per model. `make_predictor("arima", order=(1, 0, 1))` builds one.

A new model is one small module with a `base.Predictor` subclass and one line in `MODELS`.
"""

from __future__ import annotations

from typing import Any

from ..errors import PredictionError
from ..registry import build, load_class
from .base import Predictor

MODELS: dict[str, str] = {
    "persistence": "spotlab.predict.persistence:Persistence",
    "seasonal_naive": "spotlab.predict.seasonal_naive:SeasonalNaive",
    "ets": "spotlab.predict.ets:ETS",
    "arima": "spotlab.predict.arima:ARIMA",
    "gbm": "spotlab.predict.gbm:GBM",
    "duration": "spotlab.predict.duration:Duration",
    "reversion": "spotlab.predict.reversion:Reversion",
    "spells": "spotlab.predict.spells:Spells",
    "auto": "spotlab.predict.auto:Auto",
}


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
