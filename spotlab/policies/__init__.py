"""The policy registry: one line per policy. `make_policy("greedy")` builds one by name.

A new policy is one small module with a class (parameters in `__init__`, `reset(ctx)`,
`act(obs) -> (on_demand, spot)`) and one line in `REGISTRY`.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import PolicyError
from ..registry import build, load_class

REGISTRY: dict[str, str] = {
    "on_demand": "spotlab.policies.on_demand:OnDemand",
    "greedy": "spotlab.policies.greedy:Greedy",
    "uniform_progress": "spotlab.policies.uniform_progress:UniformProgress",
    "optimal": "spotlab.policies.optimal:Optimal",
    "chc": "spotlab.policies.chc:CHC",
    "select": "spotlab.policies.select:Select",
    "prediction_free": "spotlab.policies.prediction_free:PredictionFree",
    "slack_reserve": "spotlab.policies.slack_reserve:SlackReserve",
}


def policy_class(name: str) -> type:
    return load_class(REGISTRY, name, "policy", PolicyError)


def make_policy(name: str, params: Mapping[str, Any] | None = None) -> Any:
    """Build a registered policy; unknown names or parameters give a `PolicyError` listing the valid ones."""
    return build(policy_class(name), dict(params or {}), f"policy {name!r}", PolicyError)
