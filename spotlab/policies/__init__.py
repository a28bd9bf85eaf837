"""Scheduling policies: the baselines, A1 (`chc`), A2 (`prediction_free`), A3 (`select`) and the offline optimum.

A new policy is one small module with a class (parameters in `__init__`, `reset(ctx)`,
`act(obs) -> (on_demand, spot)`; the interface is `policies.base`) and one line in `REGISTRY`.
`make_policy` puts the deadline safety net (`policies.safety_net`) around every online policy.
"""
