"""The policy registry: one line per policy. `make_policy("greedy")` builds one by name.

A new policy is one small module with a class (parameters in `__init__`, `reset(ctx)`,
`act(obs) -> (on_demand, spot)`) and one line in `REGISTRY`.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Mapping

from ..errors import PolicyError

REGISTRY: dict[str, str] = {
    "on_demand": "spotlab.policies.on_demand:OnDemand",
    "greedy": "spotlab.policies.greedy:Greedy",
    "uniform_progress": "spotlab.policies.uniform_progress:UniformProgress",
    "optimal": "spotlab.policies.optimal:Optimal",
}


def policy_names() -> list[str]:
    return list(REGISTRY)


def policy_class(name: str) -> type:
    if name not in REGISTRY:
        raise PolicyError(f"unknown policy {name!r}; known policies: {', '.join(REGISTRY)}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def _coerce(value: Any, annotation: Any, default: Any, key: str, name: str) -> Any:
    """Turn a CLI string into the parameter's type (taken from the annotation or the default)."""
    if not isinstance(value, str):
        return value
    kind = annotation if annotation is not inspect.Parameter.empty else type(default)
    kind_name = getattr(kind, "__name__", str(kind))
    try:
        if kind is bool or kind_name == "bool":
            low = value.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if kind is int or kind_name == "int":
            return int(value)
        if kind is float or kind_name == "float" or "float" in str(kind):
            return float(value)
    except ValueError:
        raise PolicyError(f"policy {name!r}: parameter {key}={value!r} is not a valid {kind_name}") from None
    return value


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Build a registered policy; unknown names or parameters give a `PolicyError` listing the valid ones."""
    cls = policy_class(name)
    params = dict(params or {})
    sig = inspect.signature(cls.__init__)
    accepted = {k: p for k, p in sig.parameters.items()
                if k != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    unknown = [k for k in params if k not in accepted]
    if unknown:
        valid = ", ".join(accepted) or "none"
        raise PolicyError(f"policy {name!r} has no parameter {', '.join(map(repr, unknown))}; its parameters: {valid}")
    kwargs = {k: _coerce(v, accepted[k].annotation, accepted[k].default, k, name) for k, v in params.items()}
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"policy {name!r}: {exc}") from None
