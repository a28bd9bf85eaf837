"""How a run is simulated: the engine's billing and the deadline safety net put around online policies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import TraceError
from ..market.market import Market
from ..simulation.settings import SimSettings
from .registry import make_policy
from .safety_net import check_variant

SEMANTICS = ("auto", "cant-be-late", "spotlab")
BILLINGS = ("fractional", "full")  # the engine's (`SimSettings.billing`)


@dataclass(frozen=True)
class Semantics:
    """How a run is simulated: the market's billing (the engine's `SimSettings`) and the deadline safety net
    put around online policies (`policies.safety_net`). Can't Be Late's simulator is full billing and its guard.
    """

    billing: str = "fractional"
    safety_net: str = "strict"
    give_up: bool = False

    def __post_init__(self) -> None:
        if self.billing not in BILLINGS:
            raise TraceError(f"unknown billing {self.billing!r}; use one of {', '.join(BILLINGS)}")
        check_variant(self.safety_net, self.give_up)

    @classmethod
    def cant_be_late(cls) -> "Semantics":
        return cls(billing="full", safety_net="cbl")

    @property
    def settings(self) -> SimSettings:
        return SimSettings(billing=self.billing)

    def policy(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """The registered policy `name`, guarded by this net (a hindsight plan is never guarded)."""
        return make_policy(name, params, safety_net=self.safety_net, give_up=self.give_up)


def semantics_for(market: Market | str, semantics: str = "auto", billing: str | None = None,
                  safety_net: str | None = None, give_up: bool = False) -> Semantics:
    """The rules to simulate `market` (a `Market`, or its format: "sky_spot", "tidy", ...) with. `auto`: a
    sky_spot trace is simulated with the Can't Be Late simulator's rules (SPEC §3.2), any other market with
    spotlab's; explicit `billing` / `safety_net` override either; `give_up` lets the net stop a job not worth
    finishing on demand."""
    if semantics not in SEMANTICS:
        raise TraceError(f"unknown semantics {semantics!r}; use one of {', '.join(SEMANTICS)}")
    fmt = market.meta.get("format") if isinstance(market, Market) else market
    cbl = semantics == "cant-be-late" or (semantics == "auto" and fmt == "sky_spot")
    base = Semantics.cant_be_late() if cbl else Semantics()
    return Semantics(billing=billing or base.billing, safety_net=safety_net or base.safety_net,
                     give_up=bool(give_up))
