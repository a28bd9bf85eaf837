"""Registries of named classes (policies, predictors): look-up by name and construction from
command-line strings, with errors that list what is valid. One mechanism for every registry, so a new
policy or model is one module plus one line in its registry."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Mapping

from .errors import SpotlabError
from .params import init_parameters


def load_class(registry: Mapping[str, str], name: str, kind: str, error: type[SpotlabError]) -> type:
    """The class registered as `name` ("module:Class" strings are imported on first use);
    `kind` names what the registry holds in error messages ("policy", "model")."""
    if name not in registry:
        raise error(f"unknown {kind} {name!r}; known: {', '.join(registry)}")
    module, cls = registry[name].split(":")
    return getattr(importlib.import_module(module), cls)


def coerce(value: Any, annotation: Any, default: Any) -> Any:
    """Turn a command-line string into the parameter's type, read from its annotation or default:
    "1,0,1" for a tuple, "true"/"false" for a flag, "none"/"auto" for an optional value (unless "auto" is
    the parameter's own default: then it is that value, not None)."""
    if not isinstance(value, str):
        return value
    ann = str(annotation) if annotation is not inspect.Parameter.empty else type(default).__name__
    text = value.strip()
    if "None" in ann and (text.lower() in ("none", "") or (text.lower() == "auto" and default != "auto")):
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
        obj = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise error(f"{label}: {exc}") from None
    if callable(getattr(obj, "check_params", None)):
        obj.check_params()  # a bad value fails here, before any data is read
    return obj
