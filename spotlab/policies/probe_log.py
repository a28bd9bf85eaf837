"""A policy's probes of other zones, recorded slot by slot, so that a replay of its run can make them again.

Why: across zones a policy asks for another zone's spot through `obs.probe(zones)`, and under the rules' paid
visibility the engine bills each successful probe in the slot it is made. A run replayed from its recorded
allocations and zones alone would make no probe and cost less than the run it replays; A3 (`policies.select`)
plays its chosen member's run by replaying it, so it makes the member's probes again, in the same slots and
zones, and the engine bills them as it billed the member (same state, same availability: the same charges).
Launch attempts (`obs.first_spot`) are not recorded: a failed one is free and the one that succeeds is the launch
itself, which the recorded allocation and zone already carry.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..simulation.interface import Context, Observation


class ProbeLog:
    """Wrap a policy (e.g. one in its safety net) and record every probe it makes: `calls[t]`, an array
    (probes, windows) of the zones probed in slot t (-1: none in that window)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.calls: dict[int, np.ndarray] = {}

    @property
    def name(self) -> str:
        return getattr(self.policy, "name", type(self.policy).__name__)

    def reset(self, ctx: Context) -> None:
        self.calls = {}
        self.policy.reset(ctx)

    def act(self, obs: Observation):
        if obs.probe is None:  # one zone: nothing to probe
            return self.policy.act(obs)
        inner, made = obs.probe, []

        def probe(zones):
            z = np.broadcast_to(np.asarray(zones, dtype=np.int64), obs.active.shape)
            made.append(np.where(obs.active, z, -1))
            return inner(zones)

        action = self.policy.act(dataclasses.replace(obs, probe=probe))
        if made:
            self.calls[obs.t] = np.stack(made)
        return action

    def report(self) -> dict:
        return self.policy.report() if hasattr(self.policy, "report") else {}


def replayed_probes(calls: list[dict[int, np.ndarray]], chosen: np.ndarray) -> dict[int, np.ndarray]:
    """The probes of a run that plays member `chosen[w]` in window w, from each member's `calls` (`ProbeLog`):
    per slot, an array (probes, windows), -1 where a window's member probed less that slot."""
    chosen = np.asarray(chosen)
    played = [(k, chosen == k) for k in np.unique(chosen)]
    out: dict[int, np.ndarray] = {}
    for t in sorted({t for k, _ in played for t in calls[k]}):
        here = [(calls[k][t], mask) for k, mask in played if t in calls[k]]
        rows = np.full((max(c.shape[0] for c, _ in here), chosen.size), -1, dtype=np.int64)
        for c, mask in here:
            rows[: c.shape[0], mask] = c[:, mask]
        if (rows >= 0).any():
            out[t] = rows
    return out
