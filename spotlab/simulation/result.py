"""What a simulation produced: per-slot arrays and per-window outcomes, as tables and means."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..jobs.job import Job
from .settings import SimSettings
from .slots import EPS

if TYPE_CHECKING:
    import pandas as pd


# The per-slot arrays a simulation can record, (windows, slots) each: those written slot by slot, and views of
# the market windows.
WRITTEN = ("alive", "o", "s", "s_requested", "preempted", "reconfig", "overhead_h", "billed_h", "work", "cost",
           "remaining", "zone")  # `zone` in a run across zones only


WINDOW_VIEWS = ("avail", "spot_price", "od_price")


RECORDED = WRITTEN + WINDOW_VIEWS


@dataclass(frozen=True, eq=False)
class SimulationResult:
    """Per-slot arrays (W, H) and per-window outcomes; `records()` and `summary()` give tables."""

    policy: str
    job: Job
    settings: SimSettings
    names: tuple[str, ...]
    slot_hours: float
    arrays: dict = field(repr=False)
    completion_h: np.ndarray = field(repr=False)
    cost: np.ndarray = field(repr=False)
    value: np.ndarray = field(repr=False)
    policy_report: dict = field(default_factory=dict)  # what the policy says of itself (e.g. solver status)

    @property
    def utility(self) -> np.ndarray:
        return self.value - self.cost

    @property
    def done(self) -> np.ndarray:
        return np.isfinite(self.completion_h)

    @property
    def met_deadline(self) -> np.ndarray:
        """Finished by the soft deadline d."""
        return self.done & (self.completion_h <= self.job.deadline_h + EPS)

    @property
    def met_hard_deadline(self) -> np.ndarray:
        return self.done & (self.completion_h <= self.job.hard_deadline_h + EPS)

    def summary(self) -> pd.DataFrame:
        import pandas as pd
        a = self.arrays
        return pd.DataFrame(
            {
                "window": self.names,
                "cost": self.cost,
                "value": self.value,
                "utility": self.utility,
                "completion_h": self.completion_h,
                "met_deadline": self.met_deadline,
                "met_hard_deadline": self.met_hard_deadline,
                "reconfigurations": a["reconfig"].sum(axis=1),
                "preemptions": (a["preempted"] > 0).sum(axis=1),
                "spot_gpu_hours": (a["s"] * a["billed_h"]).sum(axis=1),
                "od_gpu_hours": (a["o"] * a["billed_h"]).sum(axis=1),
                "overhead_h": a["overhead_h"].sum(axis=1),
                "gave_up": a.get("gave_up", np.zeros(len(self.names), dtype=bool)),
            }
        )

    def metrics(self) -> dict:
        """Means over windows: the numbers a figure or the CLI reports."""
        return {
            "policy": self.policy,
            "runs": int(len(self.names)),
            "mean_cost": float(np.mean(self.cost)),
            "mean_value": float(np.mean(self.value)),
            "mean_utility": float(np.mean(self.utility)),
            "deadline_met_fraction": float(np.mean(self.met_deadline)),
            "hard_deadline_met_fraction": float(np.mean(self.met_hard_deadline)),
            "mean_completion_h": float(np.nanmean(self.completion_h)) if self.done.any() else float("nan"),
            "mean_reconfigurations": float(np.mean(self.arrays["reconfig"].sum(axis=1))),
            "gave_up_fraction": float(np.mean(self.arrays.get("gave_up", np.zeros(1)))),
            # share of the policy's decisions that were not its own (a planner's time-outs); 0 for the rules
            "fallback_rate": float(self.policy_report.get("fallback_rate", 0.0)),
        }

    def records(self) -> pd.DataFrame:
        """The per-slot record, one row per (window, slot) while the job was alive."""
        import pandas as pd
        a = self.arrays
        W, H = a["o"].shape
        alive = a["alive"]
        data = {
            "window": np.repeat(np.asarray(self.names, dtype=object), H).reshape(W, H)[alive],
            "slot": np.broadcast_to(np.arange(H), (W, H))[alive],
            "time_h": np.broadcast_to(np.arange(H) * self.slot_hours, (W, H))[alive],
        }
        for k in ("zone", "avail", "spot_price", "od_price", "o", "s", "s_requested", "preempted", "reconfig",
                  "overhead_h", "billed_h", "work", "cost", "remaining"):
            if k != "zone" or k in a:  # the zone of each slot, in a run across zones
                data[k] = a[k][alive]
        data["avail"] = data["avail"].astype(np.int64)
        return pd.DataFrame(data)
