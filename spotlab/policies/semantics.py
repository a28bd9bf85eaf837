"""How a run is simulated, by name: the engine's rules (`SimSettings`: billing and, across zones, moves, egress,
what a job sees of other zones and the peers' quirks) and the deadline safety net put around online policies.

Rule sets: `spotlab` (the default: the finishing slot billed by use, a move is a new launch paying the restart and
egress, other zones seen by paid probes, the hard deadline guarded by the strict net); `cant-be-late` (Can't Be
Late's one-zone simulator: full billing and its guard); `skynomad` (SkyNomad's multi-region simulator: full
billing, egress, paid probes, the completing slot left out of a multi-zone run's cost, its latched on-demand net);
`leaderboard` (the multi-region Can't Be Late leaderboard's simulator: full billing, free moves and free
visibility, every slot priced at the zone the run ends in, spot at its first-slot price, the deadline not
enforced beyond its guard). docs/decisions/zone-rule-sets.md says where each rule comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import TraceError
from ..market.egress import DEFAULT_EGRESS, EgressTable
from ..market.market import Market
from ..registry import coerce
from ..simulation.settings import SimSettings
from .registry import make_policy
from .safety_net import check_variant

SEMANTICS = ("auto", "cant-be-late", "spotlab", "skynomad", "leaderboard")
BILLINGS = ("fractional", "full")  # the engine's (`SimSettings.billing`)

# The engine's rules of each named rule set beyond billing (see SimSettings).
ZONE_RULES: dict[str, dict[str, Any]] = {
    "spotlab": {},
    "skynomad": {"bill_completing_slot": False},
    "leaderboard": {"moves": "free", "visibility": "free", "pricing": "final_zone_first_slot", "deadline": "none"},
}


@dataclass(frozen=True)
class Semantics:
    """How a run is simulated: the market's billing, the zone rules of `rules` (the engine's `SimSettings`), and
    the deadline safety net put around online policies (`policies.safety_net`)."""

    billing: str = "fractional"
    safety_net: str = "strict"
    give_up: bool = False
    rules: str = "spotlab"
    egress: EgressTable = field(default=DEFAULT_EGRESS)
    overrides: tuple[tuple[str, Any], ...] = ()  # SimSettings fields set beyond the rule set's, e.g. transfer_time

    def __post_init__(self) -> None:
        if self.rules not in ZONE_RULES:
            raise TraceError(f"unknown zone rules {self.rules!r}; use one of {', '.join(ZONE_RULES)}")
        if self.billing not in BILLINGS:
            raise TraceError(f"unknown billing {self.billing!r}; use one of {', '.join(BILLINGS)}")
        check_variant(self.safety_net, self.give_up)
        fixed = {"billing", "egress"}  # fields of their own here
        bad = [k for k, _ in self.overrides if k in fixed or k not in SimSettings.__dataclass_fields__]
        if bad:
            allowed = sorted(set(SimSettings.__dataclass_fields__) - fixed)
            raise TraceError(f"unknown zone rule {bad[0]!r}; the rules are {', '.join(allowed)}")
        try:
            self.settings
        except ValueError as exc:
            raise TraceError(f"zone rules: {exc}") from None

    @classmethod
    def cant_be_late(cls) -> "Semantics":
        return cls(billing="full", safety_net="cbl")

    @classmethod
    def skynomad(cls) -> "Semantics":
        return cls(billing="full", safety_net="skynomad", rules="skynomad")

    @classmethod
    def leaderboard(cls) -> "Semantics":
        return cls(billing="full", safety_net="cbl", rules="leaderboard")

    @property
    def settings(self) -> SimSettings:
        rules = {**ZONE_RULES[self.rules], **dict(self.overrides)}
        return SimSettings(billing=self.billing, egress=self.egress, **rules)

    def policy(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """The registered policy `name`, guarded by this net (a hindsight plan is never guarded)."""
        return make_policy(name, params, safety_net=self.safety_net, give_up=self.give_up)

    def key(self) -> dict[str, Any]:
        """What tells two rule sets apart in an experiment's cell key (the default zone rules say nothing, so
        one-zone keys stay what they were)."""
        out = {"billing": self.billing, "safety_net": self.safety_net, "give_up": self.give_up}
        if self.rules != "spotlab" or self.egress != DEFAULT_EGRESS or self.overrides:
            out.update(rules=self.rules, egress=self.egress.source, **dict(self.overrides))
        return out


def semantics_for(market: Any, semantics: str = "auto", billing: str | None = None,
                  safety_net: str | None = None, give_up: bool = False,
                  egress: EgressTable | None = None, overrides: Mapping[str, Any] | None = None) -> Semantics:
    """The rules to simulate `market` (a `Market`, a `ZonedMarket`, or a format: "sky_spot", "tidy", ...) with.
    `auto`: a sky_spot trace of one zone is simulated with the Can't Be Late simulator's rules (SPEC §3.2), any
    other market with spotlab's; explicit `billing` / `safety_net` override any rule set; `give_up` lets the net
    stop a job not worth finishing on demand; `egress` replaces the egress table; `overrides` sets rules of the
    engine beyond the rule set's (`SimSettings` fields: transfer_time, visibility, probe_seconds, ...)."""
    if semantics not in SEMANTICS:
        raise TraceError(f"unknown semantics {semantics!r}; use one of {', '.join(SEMANTICS)}")
    fmt = market.meta.get("format") if isinstance(market, Market) else market if isinstance(market, str) else None
    if semantics == "skynomad":
        base = Semantics.skynomad()
    elif semantics == "leaderboard":
        base = Semantics.leaderboard()
    elif semantics == "cant-be-late" or (semantics == "auto" and fmt == "sky_spot"):
        base = Semantics.cant_be_late()
    else:
        base = Semantics()
    return Semantics(billing=billing or base.billing, safety_net=safety_net or base.safety_net,
                     give_up=bool(give_up), rules=base.rules, egress=egress or base.egress,
                     overrides=tuple(sorted(_typed(overrides or {}).items())))


def _typed(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Rules given as text (the command line's `--zone-rule transfer_time=true`) as the `SimSettings` field's type."""
    fields = SimSettings.__dataclass_fields__
    out = {}
    for key, value in overrides.items():
        if key not in fields:  # Semantics names the valid ones
            out[key] = value
            continue
        try:
            out[key] = coerce(value, fields[key].type, fields[key].default)
        except ValueError:
            raise TraceError(f"zone rule {key}={value!r} is not a valid {fields[key].type}") from None
    return out
