"""Loaders and resampling: real files load, bad files fail with file, row and problem named."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from spotlab.errors import TraceError
from spotlab.market.load import load_market, trace_zones
from spotlab.market.market import Market, Observations, resample
from spotlab.market.synthetic import synthetic_market
from spotlab.market.windows_file import load_windows_csv

HEADER = "time,cloud,zone,gpu,requested,available,spot_price,on_demand_price\n"


def write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    if gz:
        p.write_bytes(gzip.compress(text.encode()))
    else:
        p.write_text(text)
    return p


def rows(*lines):
    return HEADER + "".join(line + "\n" for line in lines)


GOOD = [
    "2025-01-01T00:00:00Z,aws,z1,V100,4,4,1.0,3.0",
    "2025-01-01T00:10:00Z,aws,z1,V100,4,2,2.0,3.0",
    "2025-01-01T00:20:00Z,aws,z1,V100,4,3,1.0,3.0",
    "2025-01-01T00:30:00Z,aws,z1,V100,4,0,4.0,3.0",
]


def test_tidy_roundtrip_and_resampling(tmp_path):
    p = write(tmp_path, "m.csv.gz", rows(*GOOD), gz=True)
    m = load_market(p)
    assert m.avail.tolist() == [4, 2, 3, 0] and m.slot_hours == pytest.approx(1 / 6)
    m2 = load_market(p, slot_hours=1 / 3)  # two native steps per slot
    assert m2.avail.tolist() == [2, 0]  # minimum over the slot
    assert m2.spot_price.tolist() == pytest.approx([1.5, 2.5])  # time-weighted mean
    assert m.start == pd.Timestamp("2025-01-01T00:00Z")


def test_irregular_observations_are_time_weighted():
    obs = Observations(seconds=np.array([0.0, 600.0, 900.0, 3000.0]), avail=np.array([3, 1, 2, 2]),
                       spot_price=np.array([1.0, 4.0, 2.0, 2.0]), od_price=np.full(4, 3.0), requested=3,
                       origin=None, name="irregular", step_seconds=600.0)
    m = resample(obs, slot_hours=0.5)  # slots [0,1800), [1800,3600)
    assert m.avail.tolist() == [1, 2]
    assert m.spot_price[0] == pytest.approx((600 * 1 + 300 * 4 + 900 * 2) / 1800)
    assert m.spot_price[1] == pytest.approx(2.0)


@pytest.mark.parametrize("lines, message", [
    ([GOOD[0], GOOD[2], GOOD[1]], "line 4 .*before the previous row"),
    ([GOOD[0], GOOD[0]], "lines 2 and 3 .*duplicate time"),
    ([GOOD[0].replace(",1.0,3.0", ",-1.0,3.0")], "line 2 .*negative spot_price"),
    ([GOOD[0].replace(",1.0,3.0", ",nan,3.0")], "line 2 .*spot_price is not a number"),
    ([GOOD[0].replace(",4,4,", ",4,5,")], "line 2 .*availability above what was requested"),
    ([GOOD[0].replace(",4,4,", ",4,-1,")], "line 2 .*negative availability"),
    ([GOOD[0].replace(",4,4,", ",4,x,")], "line 2 .*available is not a whole number"),
    ([GOOD[0].replace("2025-01-01T00:00:00Z", "yesterday")], "line 2 .*unreadable time"),
    ([GOOD[0], GOOD[1].replace(",2.0,3.0", ",,3.0")], "line 3 .*spot_price missing"),
])
def test_bad_tidy_rows(tmp_path, lines, message):
    p = write(tmp_path, "bad.csv", rows(*lines))
    with pytest.raises(TraceError, match=message) as exc:
        load_market(p)
    assert "bad.csv" in str(exc.value)


def test_bad_tidy_files(tmp_path):
    with pytest.raises(TraceError, match="empty file"):
        load_market(write(tmp_path, "e.csv", ""))
    with pytest.raises(TraceError, match="no data rows"):
        load_market(write(tmp_path, "h.csv", HEADER))
    with pytest.raises(TraceError, match="missing column.*available"):
        load_market(write(tmp_path, "c.csv", "time,zone,requested\n2025-01-01T00:00:00Z,z,1\n"))
    with pytest.raises(TraceError, match="no such file"):
        load_market(tmp_path / "absent.csv")
    two = write(tmp_path, "two.csv", rows(GOOD[0], GOOD[0].replace(",z1,", ",z2,")))
    with pytest.raises(TraceError, match="holds 2 zones"):
        load_market(two)
    with pytest.raises(TraceError, match="no zone 'z9'"):
        load_market(two, zone="z9")
    assert trace_zones(two) == ["z1", "z2"]
    with pytest.raises(TraceError, match="damaged gzip"):
        corrupt = tmp_path / "corrupt.csv.gz"
        corrupt.write_bytes(b"\x1f\x8b\x08\x00garbage")
        load_market(corrupt)


def test_sky_spot_json(tmp_path):
    p = write(tmp_path, "t.json", json.dumps({"metadata": {"gap_seconds": 600}, "data": [0, 1, 1, 0]}))
    m = load_market(p)
    assert m.avail.tolist() == [1, 0, 0, 1]  # 1 = preempted in the Can't Be Late convention
    counts = write(tmp_path, "c.json", json.dumps({"metadata": {"gap_seconds": 300}, "data": [0, 5, 16]}))
    with pytest.raises(TraceError, match="convention='available'"):
        load_market(counts)
    assert load_market(counts, convention="available", requested=16).avail.tolist() == [0, 5, 16]
    for text, msg in [("", "empty file"), ("{", "not valid JSON"), ("[1,2]", "JSON object with a 'data'"),
                      ('{"metadata": {}, "data": [0]}', "gap_seconds"),
                      ('{"metadata": {"gap_seconds": 600}, "data": []}', "non-empty"),
                      ('{"metadata": {"gap_seconds": 600}, "data": [0, -1]}', r"data\[1\]"),
                      ('{"metadata": {"gap_seconds": 600}, "data": [0, 1], "prices": [1.0, -2]}', r"prices\[1\]"),
                      ('{"metadata": {"gap_seconds": 600}, "data": [0, 1], "prices": [1.0]}', "as long as")]:
        with pytest.raises(TraceError, match=msg):
            load_market(write(tmp_path, "b.json", text))


def test_windows_csv(tmp_path):
    w = load_windows_csv(write(tmp_path, "w.csv", "window,start_tick,end_tick\n0,0,5\n1,3,9\n"), n_ticks=10)
    assert w["start_tick"].tolist() == [0, 3]
    with pytest.raises(TraceError, match="line 3: end_tick 12 is beyond"):
        load_windows_csv(write(tmp_path, "w2.csv", "window,start_tick,end_tick\n0,0,5\n1,3,12\n"), n_ticks=10)
    with pytest.raises(TraceError, match="not after start_tick"):
        load_windows_csv(write(tmp_path, "w3.csv", "window,start_tick,end_tick\n0,5,5\n"))
    # blank lines are skipped but counted, so that a message names the line an editor shows
    with pytest.raises(TraceError, match=r"line 4: start_tick = '2\.5' is not a non-negative whole number"):
        load_windows_csv(write(tmp_path, "w4.csv", "window,start_tick,end_tick\n0,0,5\n\n1,2.5,9\n"))
    with pytest.raises(TraceError, match="line 2: end_tick = 'x'"):
        load_windows_csv(write(tmp_path, "w5.csv", "window,start_tick,end_tick\n0,0,x\n"))
    with pytest.raises(TraceError, match="line 3: 4 fields, the header has 3"):
        load_windows_csv(write(tmp_path, "w6.csv", "window,start_tick,end_tick\n0,0,5\n1,2,9,9\n"))
    with pytest.raises(TraceError, match="missing column"):
        load_windows_csv(write(tmp_path, "w7.csv", "window,start\n0,0\n"))
    with pytest.raises(TraceError, match="no header line"):
        load_windows_csv(write(tmp_path, "w10.csv", ",,\n , ,\n"))
    with pytest.raises(TraceError, match="header only"):
        load_windows_csv(write(tmp_path, "w8.csv", "window,start_tick,end_tick\n"))
    w = load_windows_csv(write(tmp_path, "w9.csv", "start_tick,end_tick\n4,8\n"))  # no window column: numbered
    assert w.to_dict("list") == {"window": [0], "start_tick": [4], "end_tick": [8]}


def test_market_validation():
    with pytest.raises(TraceError, match="outside 0..2"):
        Market(avail=np.array([0, 3]), spot_price=1.0, od_price=3.0, slot_hours=1.0, requested=2)
    with pytest.raises(TraceError, match="negative spot price"):
        Market(avail=np.array([0, 1]), spot_price=np.array([1.0, -1.0]), od_price=3.0, slot_hours=1.0)
    with pytest.raises(TraceError, match="non-empty"):
        Market(avail=np.array([], dtype=int), spot_price=1.0, od_price=3.0, slot_hours=1.0)


def test_real_traces_load(dataset):
    h100 = load_market(dataset("markets/gcp_h100_probes.csv.gz"), zone="us-central1-a", slot_hours=1.0)
    assert h100.requested == 16 and len(h100) > 300 and h100.has_spot_price
    v100 = load_market(dataset("markets/aws_v100_p3.2xlarge.csv.gz"), zone="us-east-1a")
    assert v100.requested == 1 and v100.spot_price.std() > 0
    cbl = load_market(dataset("sky_spot_traces/adrs-cant-be-late-traces/ping_based__us-west-2a_v100_1.json"))
    assert len(cbl) == 1781 and cbl.slot_hours == pytest.approx(1 / 6)
    h = load_market(dataset("sky_spot_traces/skynomad-gcp-h100/us-central1-a_h100_16__full.json"))
    assert h.spot_price[0] == pytest.approx(18.979008 / 8)  # per-GPU price from the 8-GPU machine


def test_synthetic_is_seeded_and_regimes_differ():
    a = synthetic_market(24 * 7, 1.0, 8, 3.0, "volatile", seed=5)
    b = synthetic_market(24 * 7, 1.0, 8, 3.0, "volatile", seed=5)
    c = synthetic_market(24 * 7, 1.0, 8, 3.0, "calm", seed=5)
    assert np.array_equal(a.avail, b.avail) and np.array_equal(a.spot_price, b.spot_price)
    assert a.spot_price.std() > c.spot_price.std() and a.avail.mean() < c.avail.mean()
    assert np.all((a.spot_price > 0) & (a.spot_price <= 3.0)) and a.avail.max() <= 8
    with pytest.raises(TraceError, match="unknown regime"):
        synthetic_market(24, regime="stormy")
