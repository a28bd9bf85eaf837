"""A market of several zones: regions from zone names, aligned zones from several traces or one file's zones, the
egress table, and bad input in one line naming the zone, file or region pair."""

from __future__ import annotations

import numpy as np
import pytest

from spotlab.errors import TraceError
from spotlab.market.egress import DEFAULT_EGRESS, EgressTable, read_egress_table
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows import cut_windows
from spotlab.market.zones import ZonedMarket, load_zones, region_of

HEADER = "time,cloud,zone,gpu,requested,available,spot_price,on_demand_price\n"


def tidy(path, zones, hours=48):
    lines = [HEADER]
    for i, z in enumerate(zones):
        for t in range(hours):
            stamp = (np.datetime64("2025-01-01T00:00") + np.timedelta64(t, "h")).astype(str)
            lines.append(f"{stamp}Z,aws,{z},V100,4,{(t + i) % 5},{0.5 + 0.1 * i:.2f},3.06\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize("zone,region", [("us-east-1a", "us-east-1"), ("us-central1-a", "us-central1"),
                                         ("asia-southeast1-b", "asia-southeast1"), ("ap-south-1c", "ap-south-1"),
                                         ("runpod", "runpod")])
def test_region_of(zone, region):
    assert region_of(zone) == region


def test_zones_of_one_file_and_of_several(tmp_path):
    path = tidy(tmp_path / "z.csv", ("us-east-1a", "us-west-2b"))
    both = load_zones(path, zones="all")
    assert both.names == ("us-east-1a", "us-west-2b") and both.regions == ("us-east-1", "us-west-2")
    one = load_zones(path, zones=["us-west-2b"])
    np.testing.assert_array_equal(one.zones[0].avail, both.zones[1].avail)
    a, b = tidy(tmp_path / "a.csv", ("us-east-1a",)), tidy(tmp_path / "b.csv", ("eu-west-1c",))
    two = load_zones([a, b])
    assert two.names == ("us-east-1a", "eu-west-1c") and len(two) == 48
    assert two.subset(["eu-west-1c"]).names == ("eu-west-1c",)
    eps = cut_windows(two, stride_hours=12, horizon_hours=12, history_hours=0)
    assert eps.z == 2 and eps.n == 4 and eps.regions == ("us-east-1", "eu-west-1")
    named = load_zones([a, b], names=["x", "y"], regions=["r1", "r1"])
    assert named.names == ("x", "y") and named.regions == ("r1", "r1")


@pytest.mark.parametrize("call,match", [
    (lambda d: load_zones([d / "a.csv", d / "short.csv"]), "zones not aligned: us-east-1a has 48 slots"),
    (lambda d: load_zones(d / "z.csv", zones=["us-east-1a", "mars-1a"]), "mars-1a"),
    (lambda d: load_zones([d / "a.csv", d / "a.csv"]), "same name"),
    (lambda d: load_zones([d / "a.csv"], names=["x", "y"]), "2 names for 1 zones"),
    (lambda d: load_zones([d / "a.csv", d / "z.csv"], zones=["us-east-1a"]), "zones= picks zones of one file"),
    (lambda d: load_zones([]), "no zones given"),
    (lambda d: load_zones([d / "a.csv"], price_per="rack"), "price_per"),
    (lambda d: load_zones(d / "z.csv", zones="all").subset(["nowhere"]), "no zone 'nowhere'"),
])
def test_bad_zones_in_one_line(tmp_path, call, match):
    tidy(tmp_path / "a.csv", ("us-east-1a",))
    tidy(tmp_path / "short.csv", ("us-east-1b",), hours=40)
    tidy(tmp_path / "z.csv", ("us-east-1a", "us-west-2b"))
    with pytest.raises(TraceError, match=match) as info:
        call(tmp_path)
    assert "\n" not in str(info.value)


def test_slots_of_other_lengths_are_not_aligned():
    a, b = synthetic_market(24, slot_hours=1.0, seed=1), synthetic_market(24, slot_hours=0.5, seed=2)
    with pytest.raises(TraceError, match="slots of 1 h, b of 0.5 h"):
        ZonedMarket((a, b), ("a", "b"), ("r", "r"))


def test_the_egress_table(tmp_path):
    assert DEFAULT_EGRESS.usd_per_gb("us-east-1", "us-east-1") == 0.0
    assert DEFAULT_EGRESS.usd_per_gb("us-east-1", "europe-west3") == 0.02
    path = tmp_path / "e.csv"
    path.write_text("from_region,to_region,usd_per_gb\n*,*,0.09\nus-east-1,*,0.02\nus-east-1,us-east-2,0.01\n")
    table = read_egress_table(path)
    assert table.usd_per_gb("us-east-1", "us-east-2") == 0.01  # the most specific row wins
    assert table.usd_per_gb("us-east-1", "eu-west-1") == 0.02 and table.usd_per_gb("eu-west-1", "us-east-1") == 0.09
    narrow = EgressTable((("us-east-1", "us-west-2", 0.02),))
    with pytest.raises(TraceError, match="no price for moving data from region us-west-2 to us-east-1"):
        narrow.check_pairs(["us-east-1", "us-west-2"])
    for text, match in (("a,b\n", "header must be"), ("from_region,to_region,usd_per_gb\n", "no rows"),
                        ("from_region,to_region,usd_per_gb\nx,y\n", "line 2: 2 fields"),
                        ("from_region,to_region,usd_per_gb\nx,y,cheap\n", "not a number"),
                        ("from_region,to_region,usd_per_gb\nx,y,-1\n", "not a price per GB"), ("", "empty")):
        path.write_text(text)
        with pytest.raises(TraceError, match=match):
            read_egress_table(path)


def test_a_marketplaces_providers_are_zones(dataset):
    from spotlab.jobs.job import make_job
    from spotlab.policies.run import run_policy
    from spotlab.policies.semantics import Semantics

    path = dataset("markets/gpu-price-tracker/H100_80GB_SXM5.jsonl.gz")
    zm = load_zones(path, zones="all", slot_hours=0.5)  # snapshots about every 30 min, resampled to 30 min
    assert "all" not in zm.names and len(zm.names) >= 2 and zm.regions == zm.names  # a provider is its own region
    eps = cut_windows(zm, stride_hours=24, horizon_hours=24, history_hours=0, max_jobs=3)
    job = make_job(8.0, 24.0, overhead_hours=0.25, checkpoint_gb=20.0)
    opt = run_policy("optimal", {}, eps, job, Semantics())
    up = run_policy("up_failover", {}, eps, job, Semantics())
    done = np.isfinite(up.completion_h) & (up.completion_h <= 24.0 + 1e-9)
    assert np.all(opt.cost[done] <= up.cost[done] + 1e-9)
