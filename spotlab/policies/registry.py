"""The policies by name: one line per policy, and `make_policy`, which builds one and puts the deadline
safety net around it when it decides online."""


from __future__ import annotations

from typing import Any, Mapping

from ..errors import PolicyError
from ..registry import build, load_class

REGISTRY: dict[str, str] = {
    "on_demand": "spotlab.policies.on_demand:OnDemand",
    "greedy": "spotlab.policies.greedy:Greedy",
    "uniform_progress": "spotlab.policies.uniform_progress:UniformProgress",
    "optimal": "spotlab.policies.optimal:Optimal",
    "optimal_netted": "spotlab.policies.optimal_netted:OptimalNetted",
    "chc": "spotlab.policies.chc:CHC",
    "chc_zones": "spotlab.policies.chc_zones:CHCZones",
    "select": "spotlab.policies.select:Select",
    "prediction_free": "spotlab.policies.prediction_free:PredictionFree",
    "prediction_free_zones": "spotlab.policies.prediction_free_zones:PredictionFreeZones",
    "slack_reserve": "spotlab.policies.slack_reserve:SlackReserve",
    "up_failover": "spotlab.policies.up_failover:UpFailover",
    "round_robin": "spotlab.policies.round_robin:RoundRobin",
    "up_probe": "spotlab.policies.up_probe:UpProbe",
    "up_probe_cost": "spotlab.policies.up_probe_cost:UpProbeCost",
}


def policy_class(name: str) -> type:
    return load_class(REGISTRY, name, "policy", PolicyError)


def make_policy(name: str, params: Mapping[str, Any] | None = None, safety_net: str = "strict",
                give_up: bool = False) -> Any:
    """Build a registered policy; unknown names or parameters give a `PolicyError` listing the valid ones.

    An online policy comes wrapped in the deadline safety net `safety_net` ("strict", "cbl" for the Can't Be
    Late guard, "off": unwrapped), with `give_up` (see `policies.safety_net`); a hindsight plan
    (`online = False`, the optimum) is returned as it is."""
    from .safety_net import SafetyNet, check_variant

    check_variant(safety_net, give_up)
    if params is not None and not isinstance(params, Mapping):
        raise PolicyError(f"policy {name!r}: params must be a mapping of parameter names to values, got "
                          f"{type(params).__name__}")
    policy = build(policy_class(name), dict(params or {}), f"policy {name!r}", PolicyError)
    if not getattr(policy, "online", False) or safety_net == "off":
        return policy
    return SafetyNet(policy, safety_net, give_up)


def resolved_params(name: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every parameter of policy `name` as it would run: the given ones and the defaults of the rest. An
    experiment hashes these, so a cached result is not reused after a default changes."""
    return build(policy_class(name), dict(params or {}), f"policy {name!r}", PolicyError).get_params()
