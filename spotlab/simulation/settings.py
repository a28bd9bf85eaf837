"""The market's rules the engine applies (SPEC §3.2): how the finishing slot is billed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SimSettings:
    """The market's rules the engine applies. `cant_be_late()` gives the billing of that simulator
    (SPEC §3.2); its deadline guard is a policy wrapper (`make_policy(..., safety_net="cbl")`)."""

    billing: Literal["fractional", "full"] = "fractional"

    def __post_init__(self) -> None:
        if self.billing not in ("fractional", "full"):
            raise ValueError(f"billing must be 'fractional' or 'full', got {self.billing!r}")

    @classmethod
    def cant_be_late(cls) -> "SimSettings":
        return cls(billing="full")
