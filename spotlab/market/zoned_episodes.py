"""The windows of a market of several zones: one `Episodes` per zone, the same windows of each (same start slots,
lengths and history), and the zones' names and regions. A run in one zone reads its zone's `Episodes` as it
would read a market of one zone."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TraceError
from .episodes import Episodes, episode_rows


@dataclass(frozen=True, eq=False)
class ZonedEpisodes:
    """W windows of Z aligned zones: `zones[z]` is zone z's `Episodes`."""

    zones: tuple[Episodes, ...]
    names: tuple[str, ...]
    regions: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.zones:
            raise TraceError("no zones to simulate")
        first = self.zones[0]
        for name, ep in zip(self.names, self.zones):
            if ep.n != first.n or ep.avail.shape[1] != first.avail.shape[1] \
                    or not np.array_equal(ep.length, first.length) or abs(ep.slot_hours - first.slot_hours) > 1e-12:
                raise TraceError(f"zone {name}: its windows are not the other zones' windows")

    @property
    def n(self) -> int:
        return self.zones[0].n

    @property
    def z(self) -> int:
        return len(self.zones)

    @property
    def slot_hours(self) -> float:
        return self.zones[0].slot_hours

    @property
    def length(self) -> np.ndarray:
        return self.zones[0].length

    @property
    def window_names(self) -> tuple[str, ...]:
        return self.zones[0].names

    def rows(self, rows: slice) -> "ZonedEpisodes":
        """The windows `rows` of every zone (views, no copy)."""
        return ZonedEpisodes(tuple(episode_rows(ep, rows) for ep in self.zones), self.names, self.regions)
