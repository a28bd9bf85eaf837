"""What moving a job's checkpoint between two regions costs: USD per GB for each pair of regions (SPEC §9).

The default is SkyNomad's price table as its simulator applies it to these zones: free inside one region (zones of
`us-central1`), USD 0.02 per GB between any two regions (its AWS-style table falls back to that default for GCP
names; andylizf/skynomad-artifact @ 62b9aaa, `sky_spot/migration_model.py`). AWS lists USD 0.02 per GB for data
sent from one US region to another (EC2 on-demand pricing, "Data Transfer OUT to other AWS regions"). A user's own
table is a CSV of `from_region, to_region, usd_per_gb` rows; `*` in a row matches any region, the most specific row
wins, and a pair no row covers is an error naming it, never a silent zero.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

from ..errors import TraceError
from ..text_files import read_text

ANY = "*"
DEFAULT_USD_PER_GB = 0.02  # SkyNomad's table between two regions (see the module docstring)


def continent_of(region: str) -> str:
    """The text before a region's first dash: `us`, `europe`, `asia`, ... (a checkpoint crosses continents slower)."""
    return str(region).split("-", 1)[0]


@dataclass(frozen=True)
class EgressTable:
    """USD per GB from one region to another; `rows` are (from, to, usd_per_gb), `*` matching any region."""

    rows: tuple[tuple[str, str, float], ...]
    source: str = "SkyNomad's table: free within a region, USD 0.02/GB between regions"

    def __post_init__(self) -> None:
        for a, b, price in self.rows:
            if not (isinstance(price, (int, float)) and math.isfinite(price) and price >= 0):
                raise TraceError(f"egress {a} -> {b}: {price!r} is not a price in USD per GB (a number >= 0)")

    def usd_per_gb(self, src: str, dst: str) -> float:
        """The price of one GB from region `src` to region `dst` (0 within one region unless a row says more)."""
        best, rank = None, -1
        for a, b, price in self.rows:
            if a in (src, ANY) and b in (dst, ANY):
                r = (a != ANY) + (b != ANY)
                if r > rank:
                    best, rank = price, r
        if best is not None and (rank > 0 or src != dst):
            return float(best)
        if src == dst:
            return 0.0
        raise TraceError(f"egress: no price for moving data from region {src} to {dst}; add a row for it (or a "
                         f"'*,*' default) to the egress table")

    def check_pairs(self, regions) -> None:
        """A `TraceError` naming the first pair of `regions` the table has no price for (before any work)."""
        for a in regions:
            for b in regions:
                self.usd_per_gb(a, b)


DEFAULT_EGRESS = EgressTable(((ANY, ANY, DEFAULT_USD_PER_GB),))


def read_egress_table(path: str | Path) -> EgressTable:
    """A CSV of `from_region, to_region, usd_per_gb` (a header line first), checked line by line."""
    path = Path(path)
    text = read_text(path, "egress table (CSV)")
    rows = list(csv.reader(StringIO(text)))
    rows = [r for r in rows if r and "".join(r).strip()]
    if not rows:
        raise TraceError(f"{path}: empty egress table; it needs a header from_region,to_region,usd_per_gb")
    header = [c.strip() for c in rows[0]]
    if header != ["from_region", "to_region", "usd_per_gb"]:
        raise TraceError(f"{path}: the header must be from_region,to_region,usd_per_gb (got {','.join(header)})")
    out = []
    for line, r in enumerate(rows[1:], start=2):
        if len(r) != 3:
            raise TraceError(f"{path}: line {line}: {len(r)} fields, want from_region,to_region,usd_per_gb")
        try:
            price = float(r[2])
        except ValueError:
            raise TraceError(f"{path}: line {line}: usd_per_gb {r[2]!r} is not a number") from None
        if not (math.isfinite(price) and 0 <= price <= 1e3):
            raise TraceError(f"{path}: line {line}: usd_per_gb {r[2]!r} is not a price per GB (0..1000)")
        out.append((r[0].strip(), r[1].strip(), price))
    if not out:
        raise TraceError(f"{path}: the egress table has no rows")
    return EgressTable(tuple(out), source=str(path))
