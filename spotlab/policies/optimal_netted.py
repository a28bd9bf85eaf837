"""The hindsight optimum played through the deadline safety net: what a guarded online policy can reach.

Why: every online policy runs inside the strict net, which insures each slot against the preemptions no
online policy can rule out: it calls N_max on-demand GPUs once N_max of them starting next slot could no
longer finish by the hard deadline. The hindsight optimum knows spot will stay and may run closer to the
deadline than that; where the slack is so tight, no guarded policy follows it, whatever its forecasts. This
plan is the optimum's schedule with the net applied slot by slot, so "A1 with perfect forecasts is the
optimum" is checked against what its rules allow (`spotlab.experiments.heldout`, `tests/policies/test_chc_quality.py`).
It sees the future like `optimal` and is never a pool member of `select`.
"""

from __future__ import annotations

from .optimal import Optimal


class OptimalNetted(Optimal):
    """The optimum's schedule (same parameters as `optimal`) under the safety net of the run."""

    name = "optimal_netted"
    online = True  # so that make_policy guards it like an online policy; it still plans in hindsight
    hindsight = True
