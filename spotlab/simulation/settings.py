"""The market's rules the engine applies (SPEC §3.2, §9): how the finishing slot is billed and, across zones, what
a move costs, what a job sees of other zones, and the peers' quirks their numbers depend on.

The defaults are spotlab's own rules, and with one zone they are the rules every one-zone number was computed
under. The rule sets of `policies.semantics` (spotlab, SkyNomad's, the multi-region leaderboard's) are named
combinations of these fields with a deadline safety net.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

import numpy as np

from ..market.egress import DEFAULT_EGRESS, EgressTable, continent_of

BILLINGS = ("fractional", "full")
MOVES = ("relaunch", "free")
VISIBILITIES = ("probe", "free")
PRICINGS = ("used", "final_zone_first_slot")
DEADLINES = ("hard", "none")


@dataclass(frozen=True)
class SimSettings:
    """The rules of one run.

    - `billing`: the finishing slot billed by use ("fractional") or in full ("full": Can't Be Late, SkyNomad).
    - `moves`: a move to another zone is a new launch, paying the restart overhead ("relaunch"), or free and
      instant ("free": the leaderboard's simulator, where only a change of instance type restarts).
    - `egress` and `transfer_time`: a move from the zone that last ran the job to another region pays the
      checkpoint's size (the job's `checkpoint_gb`) times the table's price, and with `transfer_time` the
      checkpoint's transfer (at `bandwidth_gbps` within a continent, `bandwidth_across_gbps` across) adds to the
      restart (`move_usd`, `move_hours`).
    - `visibility`: another zone's spot availability is seen only by a probe ("probe": a successful probe is
      billed `probe_seconds` of that zone's spot price, a failed one or a failed launch is free) or for free.
    - `bill_completing_slot`: False drops the cost of the slot in which the job completes in a run across zones
      (SkyNomad's benchmark reports its cost before that slot's bill).
    - `pricing`: "final_zone_first_slot" prices every slot of a run at the zone it ends in, spot at that zone's
      first-slot price (the leaderboard's simulator).
    - `deadline`: "none" runs a job past its hard deadline until it finishes or the window ends (the
      leaderboard's simulator does not enforce it).
    """

    billing: Literal["fractional", "full"] = "fractional"
    moves: Literal["relaunch", "free"] = "relaunch"
    egress: EgressTable = field(default=DEFAULT_EGRESS)
    transfer_time: bool = False
    bandwidth_gbps: float = 8.2  # a checkpoint's transfer within a continent (SkyNomad's figure)
    bandwidth_across_gbps: float = 3.59  # and across continents (SkyNomad's figure)
    visibility: Literal["probe", "free"] = "probe"
    probe_seconds: float = 60.0
    bill_completing_slot: bool = True
    pricing: Literal["used", "final_zone_first_slot"] = "used"
    deadline: Literal["hard", "none"] = "hard"

    def __post_init__(self) -> None:
        for name, value, allowed in (("billing", self.billing, BILLINGS), ("moves", self.moves, MOVES),
                                     ("visibility", self.visibility, VISIBILITIES),
                                     ("pricing", self.pricing, PRICINGS), ("deadline", self.deadline, DEADLINES)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if not isinstance(self.egress, EgressTable):
            raise ValueError(f"egress must be an EgressTable, got {type(self.egress).__name__}")
        for name, value in (("probe_seconds", self.probe_seconds), ("bandwidth_gbps", self.bandwidth_gbps),
                            ("bandwidth_across_gbps", self.bandwidth_across_gbps)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
            if name.startswith("bandwidth") and value == 0:
                raise ValueError(f"{name} must be > 0")

    def move_usd(self, regions: Sequence[str], checkpoint_gb: float) -> np.ndarray:
        """(Z, Z): the egress a move from zone i to zone j pays (the checkpoint at the table's price between their
        regions; nothing where moves are free)."""
        if self.moves == "free":
            return np.zeros((len(regions), len(regions)))
        return np.array([[self.egress.usd_per_gb(a, b) * float(checkpoint_gb) for b in regions] for a in regions])

    def move_hours(self, regions: Sequence[str], checkpoint_gb: float) -> np.ndarray:
        """(Z, Z): the hours a move from zone i to zone j adds to its restart while the checkpoint travels (none
        in place, or without `transfer_time`)."""
        same = np.array([[continent_of(a) == continent_of(b) for b in regions] for a in regions], dtype=bool)
        bw = np.where(same, self.bandwidth_gbps, self.bandwidth_across_gbps)
        hours = float(checkpoint_gb) * 8.0 / bw / 3600.0
        return np.where(np.eye(len(regions), dtype=bool) | (not self.transfer_time), 0.0, hours)

    @classmethod
    def cant_be_late(cls) -> "SimSettings":
        return cls(billing="full")
