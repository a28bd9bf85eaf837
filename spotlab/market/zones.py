"""A market of several zones (SPEC §9): aligned zones, each a `Market` (availability, spot price, on-demand price on
one slot grid), with the cloud region of each, which decides what moving a job between two of them costs.

A market of one zone is a `Market`: everything that runs on one zone runs on it unchanged. Zones are aligned when
they share the slot length, the number of slots and, where the traces say it, the start time; a zone without a spot
or an on-demand price cannot be simulated, so `load_zones` refuses both, each with one line naming the zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import TraceError
from .load import load_market, trace_format, trace_zones
from .market import Market

ALL = "all"


def region_of(zone: str) -> str:
    """The cloud region of a zone's name: AWS `us-east-1a` -> `us-east-1`, GCP `us-central1-a` -> `us-central1`;
    a name with no zone letter is its own region (a marketplace provider)."""
    name = str(zone)
    if re.fullmatch(r"[a-z]+(-[a-z]+)+-\d+[a-z]", name):  # AWS: the zone letter follows the region's number
        return name[:-1]
    if re.fullmatch(r"[a-z]+(-[a-z0-9]+)+-[a-z]", name):  # GCP: the zone letter after a dash
        return name[:-2]
    return name


@dataclass(frozen=True, eq=False)
class ZonedMarket:
    """Aligned zones: `zones[i]` is zone `names[i]`'s market, in region `regions[i]`."""

    zones: tuple[Market, ...]
    names: tuple[str, ...]
    regions: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.zones:
            raise TraceError("a zoned market needs at least one zone")
        if not (len(self.zones) == len(self.names) == len(self.regions)):
            raise TraceError("a zoned market needs one name and one region per zone")
        if len(set(self.names)) < len(self.names):
            raise TraceError(f"two zones have the same name ({', '.join(self.names)}); name each zone once")
        first = self.zones[0]
        for name, zone in zip(self.names, self.zones):
            if abs(zone.slot_hours - first.slot_hours) > 1e-12:
                raise TraceError(f"zones not aligned: {self.names[0]} has slots of {first.slot_hours:g} h, {name} of "
                                 f"{zone.slot_hours:g} h")
            if len(zone) != len(first):
                raise TraceError(f"zones not aligned: {self.names[0]} has {len(first)} slots, {name} {len(zone)}")
            if first.start is not None and zone.start is not None and zone.start != first.start:
                raise TraceError(f"zones not aligned: {self.names[0]} starts at {first.start}, {name} at {zone.start}")

    @property
    def n(self) -> int:
        return len(self.zones)

    @property
    def slot_hours(self) -> float:
        return self.zones[0].slot_hours

    def __len__(self) -> int:
        return len(self.zones[0])

    def zone(self, name: str) -> Market:
        if name not in self.names:
            raise TraceError(f"no zone {name!r}; the zones are {', '.join(self.names)}")
        return self.zones[self.names.index(name)]

    def subset(self, names: Sequence[str]) -> "ZonedMarket":
        """The zones `names`, in that order (the first is where a job starts)."""
        missing = [n for n in names if n not in self.names]
        if missing:
            raise TraceError(f"no zone {missing[0]!r}; the zones are {', '.join(self.names)}")
        idx = [self.names.index(n) for n in names]
        return ZonedMarket(tuple(self.zones[i] for i in idx), tuple(self.names[i] for i in idx),
                           tuple(self.regions[i] for i in idx))

    def window(self, start: int, stop: int) -> "ZonedMarket":
        return replace(self, zones=tuple(z.window(start, stop) for z in self.zones))


def zone_name(path: str | Path) -> str:
    """A zone's name from its file's name, where the file does not say it (sky_spot JSON): what precedes the first
    `_` (`us-east-1a_v100_1__0.json`)."""
    return Path(path).name.split("_", 1)[0].removesuffix(".json")


def load_zones(sources: str | Path | Sequence[str | Path], *, zones: Sequence[str] | str | None = None,
               names: Sequence[str] | None = None, regions: Sequence[str] | None = None,
               slot_hours: float | None = None, convention: str | None = None, spot_price: float | None = None,
               od_price: float | None = None, spot_share: float | None = None,
               price_per: str = "gpu") -> ZonedMarket:
    """Aligned zones from `sources`: several trace files (one zone each, named as the file says, or for sky_spot
    JSON by the file's name up to the first `_`), or one file of several zones (a tidy CSV or a marketplace file, whose
    providers are its zones) with `zones` naming which (a list, or "all"). Each zone is read by
    `load.load_market`, so every check and price assumption of one zone holds for each. `price_per="instance"`
    prices a sky_spot zone per machine rather than per GPU (SkyNomad's benchmark counts machines)."""
    if price_per not in ("gpu", "instance"):
        raise TraceError(f"price_per must be 'gpu' or 'instance', got {price_per!r}")
    paths = [sources] if isinstance(sources, (str, Path)) else list(sources)
    if not paths:
        raise TraceError("no zones given: name several trace files, or one file and its zones")
    kw = dict(slot_hours=slot_hours, spot_price=spot_price, od_price=od_price, spot_share=spot_share)
    if convention is not None:
        kw["convention"] = convention
    if len(paths) == 1 and zones is not None:
        path = paths[0]
        if trace_format(path) == "sky_spot":
            raise TraceError(f"{path} is a sky_spot JSON trace of one zone; give one file per zone")
        wanted = trace_zones(path) if zones == ALL else list(zones)
        if trace_format(path) == "marketplace" and zones == ALL:
            wanted = [z for z in wanted if z != ALL]  # the providers, not the market-wide summary
        if not wanted:
            raise TraceError(f"{path}: no zones to load")
        markets = [load_market(path, zone=z, **kw) for z in wanted]
        zone_names = [str(z) for z in wanted]
    else:
        if zones is not None:
            raise TraceError("zones= picks zones of one file; with several files each file is a zone")
        markets = [load_market(p, **kw) for p in paths]
        zone_names = [str(m.meta.get("zone") or zone_name(p)) for p, m in zip(paths, markets)]
    if price_per == "instance":
        markets = [_per_instance(m) for m in markets]
    if names is not None:
        if len(names) != len(markets):
            raise TraceError(f"{len(names)} names for {len(markets)} zones")
        zone_names = [str(n) for n in names]
    for name, m in zip(zone_names, markets):
        for ok, which in ((m.has_spot_price, "spot"), (m.has_od_price, "on-demand")):
            if not ok:
                raise TraceError(f"zone {name}: the trace has no {which} price for some slots; give one "
                                 f"(--{which}-price, or {'spot_price=' if which == 'spot' else 'od_price='})")
    regs = [region_of(n) for n in zone_names] if regions is None else [str(r) for r in regions]
    if len(regs) != len(markets):
        raise TraceError(f"{len(regs)} regions for {len(markets)} zones")
    return ZonedMarket(tuple(markets), tuple(zone_names), tuple(regs))


def _per_instance(market: Market) -> Market:
    """A sky_spot zone priced per machine: its per-GPU prices times the machine's GPUs."""
    k = float(market.meta.get("gpus_per_instance", 1.0))
    if k == 1.0:
        return market
    return replace(market, spot_price=np.asarray(market.spot_price) * k, od_price=np.asarray(market.od_price) * k,
                   meta={**market.meta, "priced_per": "instance"})
