"""Registries of named classes (policies, predictors): look-up by name and construction from
command-line strings, with errors that list what is valid. One mechanism for every registry, so a new
policy or model is one module plus one line in its registry."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Mapping

from .errors import SpotlabError


def load_class(registry: Mapping[str, str], name: str, kind: str, error: type[SpotlabError]) -> type:
    """The class registered as `name` ("module:Class" strings are imported on first use);
    `kind` names what the registry holds in error messages ("policy", "model")."""
    if name not in registry:
        raise error(f"unknown {kind} {name!r}; known: {', '.join(registry)}")
    module, cls = registry[name].split(":")
    return getattr(importlib.import_module(module), cls)


def coerce(value: Any, annotation: Any, default: Any) -> Any:
    """Turn a command-line string into the parameter's type, read from its annotation or default:
    "1,0,1" for a tuple, "true"/"false" for a flag, "none"/"auto" for an optional value."""
    if not isinstance(value, str):
        return value
    ann = str(annotation) if annotation is not inspect.Parameter.empty else type(default).__name__
    text = value.strip()
    if "None" in ann and text.lower() in ("none", "auto", ""):
        return None
    if "tuple" in ann:
        items = [v.strip() for v in text.strip("()[] ").split(",") if v.strip()]
        return tuple(items) if "str" in ann else tuple(int(v) for v in items)
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
    return value


def init_parameters(cls: type) -> dict[str, inspect.Parameter]:
    """The keyword parameters of `cls.__init__`: what a registered class can be configured with."""
    sig = inspect.signature(cls.__init__)
    return {k: p for k, p in sig.parameters.items()
            if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


class Params:
    """scikit-learn's convention for registered classes: every `__init__` parameter is stored under
    its own name, so parameters can be listed, printed and used to build a fresh copy."""

    @classmethod
    def param_names(cls) -> list[str]:
        return list(init_parameters(cls))

    def get_params(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


def build(cls: type, params: Mapping[str, Any], label: str, error: type[SpotlabError]) -> Any:
    """`cls(**params)` with strings converted; unknown or invalid parameters raise `error` naming them."""
    accepted = init_parameters(cls)
    unknown = [k for k in params if k not in accepted]
    if unknown:
        valid = ", ".join(f"{k}={p.default!r}" for k, p in accepted.items()) or "none"
        raise error(f"{label} has no parameter {', '.join(map(repr, unknown))}; its parameters (defaults): {valid}")
    kwargs = {}
    for k, v in params.items():
        try:
            kwargs[k] = coerce(v, accepted[k].annotation, accepted[k].default)
        except ValueError:
            raise error(f"{label}: parameter {k}={v!r} is not a valid {accepted[k].annotation}") from None
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise error(f"{label}: {exc}") from None
