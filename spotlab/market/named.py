"""The markets the notebooks and `spotlab heldout` know by name: real traces of `markets/` with the price
assumptions a schedule needs, and the synthetic regimes.

Count traces without prices get an assumed spot price (a fixed share of on-demand, stated in `MarketSpec.note`),
since a schedule needs a cost; the V100 p3.2xlarge trace is the one with real per-tick spot prices (single GPU).
A named market's assumption makes its prices constant: the on-demand price given, else the trace's median, and
spot that share of it. `spotlab.market.load.load_market` reads these by key, like any trace file by path.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MarketSpec:
    title: str
    relpath: str | None  # None: synthetic
    zone: str | None = None
    regime: str | None = None
    spot_share: float | None = None  # assumed spot price = share x on-demand, where the trace has none
    od_price: float | None = None  # assumed on-demand price, where the trace has none
    note: str = ""
    last_hours: float | None = None  # keep only the trace's last hours (run time; see the entry's note)
    skip_hours: float | None = None  # where jobs start (None: after a week of history; see `market.windows`)


MARKET_SPECS: dict[str, MarketSpec] = {
    "h100": MarketSpec("GCP H100, us-central1-a (counts of 16, list prices)", "markets/gcp_h100_probes.csv.gz",
                       "us-central1-a"),
    "v100_prices": MarketSpec("AWS V100 p3.2xlarge, us-east-1a (real per-tick spot price, 1 GPU)",
                              "markets/aws_v100_p3.2xlarge.csv.gz", "us-east-1a"),
    "v100_16": MarketSpec("AWS V100, us-west-2a (counts of 16)", "markets/aws_v100_16node_counts.csv.gz",
                          "us-west-2a", spot_share=0.3,
                          note="spot price assumed 0.3 x on-demand (the trace has none)"),
    "a100": MarketSpec("GCP A100-40GB, asia-northeast1-a (counts of 4)", "markets/gcp_a100_counts.csv.gz",
                       "asia-northeast1-a", spot_share=0.3, od_price=3.67, skip_hours=0.0,
                       note="prices assumed: on-demand 3.67 $/GPU-h (GCP a2 list price per GPU), spot 0.3 x that; "
                            "the trace is 32 h long, so jobs start at its first slot, with no week of history"),
    "marketplace": MarketSpec("GPU-cloud marketplace, H100 SXM5, all providers (8 requested, 30 min snapshots)",
                              "markets/gpu-price-tracker/H100_80GB_SXM5.jsonl.gz", "all", last_hours=24 * 16,
                              note="spot = cheapest flagged-interruptible offer, else the p10 price; on-demand = "
                                   "median listing; GPUs = listed at the spot price (spotlab.market.marketplace); last "
                                   "16 days (from 2025-10-31: a week of history, then 9 days of jobs, DataCrunch's "
                                   "flagged spot offers included) to keep the notebooks' run time small"),
    "calm": MarketSpec("synthetic, calm regime", None, regime="calm"),
    "volatile": MarketSpec("synthetic, volatile regime", None, regime="volatile"),
}

