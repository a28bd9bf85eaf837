"""Bad and edge inputs as a new user gives them: every command and the Python front door answer each with one clear
line naming what is wrong (exit code 2 on the command line), never a traceback, a silently wrong number or a run
that does not end. Each CLI case runs in-process (`spotlab.cli.main.main`), on small files written here, and fails
before any long work.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spotlab.cli.main import main
from spotlab.errors import SpotlabError

HOURS = 24 * 10  # the tidy trace: ten days of hourly probes, one zone


def _snapshot(i: int, median: float = 2.0) -> str:
    t = pd.Timestamp("2025-01-01", tz="UTC") + pd.Timedelta(minutes=30 * i)
    return json.dumps({"timestamp": t.isoformat(), "price_stats": {"min": 1.0, "p10": 1.2, "p25": 1.5, "median": median},
                       "availability": {"total": 4}, "by_provider": {"acme": {"count": 2, "min": 1.0, "avg": 1.5}},
                       "by_config": {"8x": {"count": 2, "min_per_gpu": 1.0, "avg_per_gpu": 1.5,
                                            "best_deal": {"provider": "acme"}}}})


@pytest.fixture(scope="module")
def d(tmp_path_factory) -> Path:
    """A folder of small good and bad inputs."""
    root = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    t = pd.date_range("2025-01-01", periods=HOURS, freq="h", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    tidy = pd.DataFrame({"time": t, "zone": "z1", "requested": 8, "available": rng.integers(0, 9, HOURS),
                         "spot_price": np.round(rng.uniform(1, 2, HOURS), 3), "on_demand_price": 3.0}).astype(str)
    tidy.to_csv(root / "tidy.csv", index=False)
    pd.concat([tidy, tidy.assign(zone="z2")]).sort_values("time", kind="stable").to_csv(root / "tidy2.csv",
                                                                                         index=False)

    def variant(name: str, **cells) -> None:
        frame = tidy.copy()
        for col, (row, value) in cells.items():
            frame.loc[row, col] = value
        frame.to_csv(root / name, index=False)

    variant("t_bigprice.csv", spot_price=(4, "1e12"))
    variant("t_bigod.csv", on_demand_price=(7, "5e9"))
    variant("t_nan.csv", spot_price=(5, "nan"))
    variant("t_inf.csv", on_demand_price=(5, "inf"))
    variant("t_negav.csv", available=(5, "-1"))
    variant("t_overav.csv", available=(5, "9"))
    variant("t_frac.csv", available=(0, "2.5"))
    variant("t_negprice.csv", spot_price=(0, "-1"))
    variant("t_badtime.csv", time=(5, "yesterday"))
    variant("t_emptyzone.csv", zone=(5, ""))
    variant("t_dup.csv", time=(6, tidy.loc[5, "time"]))
    variant("t_reqhuge.csv", requested=(0, "1e30"))
    tidy.assign(on_demand_price="").to_csv(root / "t_nood.csv", index=False)
    tidy.iloc[:1].to_csv(root / "t_one.csv", index=False)
    (root / "t_header.csv").write_text(",".join(tidy.columns) + "\n")
    years = tidy.copy()
    years["time"] = pd.date_range("1000-01-01", periods=HOURS, freq="3650D").strftime("%Y-%m-%dT%H:%M:%SZ")
    years.to_csv(root / "t_years.csv", index=False)
    (root / "empty.csv").write_text("")
    (root / "garbage.bin").write_bytes(bytes(range(256)) * 8)
    (root / "garbage.csv").write_text("hello world\nthis is not, a trace\n")

    def sky(name: str, data=None, gap=3600, **extra) -> None:
        obj = {"metadata": {"gap_seconds": gap, **extra.pop("metadata", {})},
               "data": [0, 1] * (HOURS // 2) if data is None else data, **extra}
        (root / name).write_text(json.dumps(obj))

    sky("sky.json", prices=[1.0] * HOURS, metadata={"price_info": {"on_demand_price": 3.0}})
    sky("sky3d.json", data=[0, 1] * 36, prices=[1.0] * 72, metadata={"price_info": {"on_demand_price": 3.0}})
    sky("s_bigprice.json", prices=[1.0] * 3 + [1e12] + [1.0] * (HOURS - 4))
    sky("s_bigod.json", metadata={"price_info": {"on_demand_price": 1e12}})
    sky("s_odtext.json", metadata={"price_info": {"on_demand_price": "3"}})
    sky("s_gap0.json", gap=0)
    sky("s_gaptext.json", gap="600")
    sky("s_empty.json", data=[])
    sky("s_prlen.json", prices=[1.0] * 3)
    sky("s_frac.json", data=[0.5] * HOURS)
    sky("s_counts.json", data=[0, 3] * (HOURS // 2))
    sky("s_nan.json", data=[0, 1, math.nan] + [0] * (HOURS - 3))
    sky("s_huge.json", data=[0, 1e30] + [0] * (HOURS - 2))
    sky("s_negq.json", prices=[8.0] * HOURS, metadata={"price_info": {"components": [{"label": "gpu", "quantity": -8}]}})
    text = (root / "tidy.csv").read_text()
    (root / "semi.csv").write_text(text.replace(",", ";"))
    (root / "upper.csv").write_text(text.replace("time,zone", "Time,Zone", 1))
    (root / "s_list.json").write_text("[0, 1, 0]")
    (root / "s_trunc.json").write_text('{"metadata": {"gap_seconds": 3600}, "data": [0, 1,')
    lines = [_snapshot(i) for i in range(40)]
    (root / "mp.jsonl").write_text("\n".join(lines) + "\n")
    (root / "m_bigprice.jsonl").write_text("\n".join(lines[:4] + [_snapshot(4, 1e12)] + lines[5:]) + "\n")
    (root / "m_trunc.jsonl").write_text("\n".join(lines[:20]) + "\n" + lines[20][:40] + "\n")
    (root / "m_order.jsonl").write_text("\n".join(lines[:20][::-1]) + "\n")
    (root / "m_empty.jsonl").write_text("\n\n")
    for name, text in {"w_rev.csv": "0,20,10", "w_beyond.csv": "0,10,100000", "w_neg.csv": "0,-5,10",
                       "w_frac.csv": "0,1.5,10", "w_text.csv": "0,a,b", "w_huge.csv": "0,1e30,2e30"}.items():
        (root / name).write_text(f"window,start_tick,end_tick\n{text}\n")
    (root / "w_header.csv").write_text("window,start_tick,end_tick\n")
    (root / "w_nocols.csv").write_text("a,b\n1,2\n")
    (root / "g_unknown.yaml").write_text("bogus: [1, 2]\n")
    (root / "g_empty_list.yaml").write_text("quick: []\n")
    (root / "g_scalar.yaml").write_text("quick: true\n")
    (root / "g_ok.yaml").write_text("quick: [true]\n")
    (root / "nb.py").write_text('# %% tags=["parameters"]\nout_dir = "out"\nquick = False\n')
    (root / "r_bad.csv").write_text("a,b\n1,2\n")
    (root / "nothing").mkdir()
    (root / "foreign").mkdir()
    (root / "foreign" / "README.md").write_text("# My project\n")
    (root / "full.csv").symlink_to("/dev/full")
    return root


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


SIM = ["--policy", "greedy", "--work-hours", "2", "--deadline-hours", "4", "--restart-overhead-hours", "0"]
T = ["simulate", "--trace", "{d}/tidy.csv"]
SW = ["sweep", "{d}/nb.py", "--grid"]
HO = ["heldout", "{d}/tidy.csv", "--out", "{d}/ho"]
CC = ["cotune", "cluster"]
RT = ["rl", "train", "--preset", "philly", "--trace", "philly-gpw", "--out", "{d}/rl"]
RE = ["rl", "evaluate", "--preset", "philly", "--trace", "philly-gpw", "--model"]

CASES = [
    # ---------------------------------------------------------------- trace files: the front door's formats
    (["simulate", "--trace", "{d}/t_bigprice.csv", *SIM], "t_bigprice.csv: line 6 (zone z1): spot_price above 1e+09"),
    (["simulate", "--trace", "{d}/t_bigod.csv", *SIM], "t_bigod.csv: line 9 (zone z1): on_demand_price above 1e+09"),
    (["simulate", "--trace", "{d}/s_bigprice.json", *SIM], "s_bigprice.json: prices[3] = 1000000000000.0 is above"),
    (["simulate", "--trace", "{d}/s_bigod.json", *SIM], "metadata.price_info.on_demand_price = 1000000000000.0 is above"),
    (["simulate", "--trace", "{d}/s_odtext.json", *SIM], "on_demand_price = '3' is not a price"),
    (["simulate", "--trace", "{d}/m_bigprice.jsonl", *SIM], "m_bigprice.jsonl: line 5: price_stats.median = 1000000000000.0"),
    (["simulate", "--trace", "{d}/empty.csv", *SIM], "empty.csv: empty file"),
    (["simulate", "--trace", "{d}/garbage.bin", *SIM], "garbage.bin: not a UTF-8 text file"),
    (["simulate", "--trace", "{d}/garbage.csv", *SIM], "missing column(s) time, zone"),
    (["simulate", "--trace", "{d}/t_nan.csv", *SIM], "line 7 (zone z1): spot_price is not a number"),
    (["simulate", "--trace", "{d}/t_inf.csv", *SIM], "line 7 (zone z1): on_demand_price is not a number"),
    (["simulate", "--trace", "{d}/t_negav.csv", *SIM], "line 7 (zone z1): negative availability"),
    (["simulate", "--trace", "{d}/t_overav.csv", *SIM], "availability above what was requested"),
    (["simulate", "--trace", "{d}/t_frac.csv", *SIM], "available is not a whole number"),
    (["simulate", "--trace", "{d}/t_negprice.csv", *SIM], "negative spot_price"),
    (["simulate", "--trace", "{d}/t_badtime.csv", *SIM], "line 7 (zone z1): unreadable time"),
    (["simulate", "--trace", "{d}/t_emptyzone.csv", *SIM], "empty zone"),
    (["simulate", "--trace", "{d}/t_dup.csv", *SIM], "lines 7 and 8 (zone z1): duplicate time"),
    (["simulate", "--trace", "{d}/t_reqhuge.csv", *SIM], "requested is above 1e+09 GPUs"),
    (["simulate", "--trace", "{d}/t_nood.csv", *SIM], "no on-demand price for some slots"),
    (["simulate", "--trace", "{d}/t_one.csv", *SIM], "one observation only"),
    (["simulate", "--trace", "{d}/t_header.csv", *SIM], "no data rows (header only)"),
    (["simulate", "--trace", "{d}/t_years.csv", *SIM], "shorter than one slot of the market (87600 h)"),
    (["simulate", "--trace", "{d}/t_years.csv", "--slot-hours", "1", *SIM], "more than the 1e+07 a market may hold"),
    (["simulate", "--trace", "{d}/tidy2.csv", *SIM], "holds 2 zones (z1, z2); choose one"),
    (["simulate", "--trace", "{d}/tidy2.csv", "--zone", "nope", *SIM], "no zone 'nope'; zones in the file: z1, z2"),
    (["simulate", "--trace", "{d}/tidy2.csv#z1", "--zone", "z2", *SIM], "the zone is given twice"),
    (["simulate", "--trace", "{d}/sky.json", "--zone", "z", *SIM], "a zone (--zone, zone=) applies to tidy CSVs"),
    (["simulate", "--trace", "{d}/s_gap0.json", *SIM], "metadata.gap_seconds must be a positive number (got 0)"),
    (["simulate", "--trace", "{d}/s_gaptext.json", *SIM], "gap_seconds must be a positive number (got '600')"),
    (["simulate", "--trace", "{d}/s_empty.json", *SIM], "'data' must be a non-empty list"),
    (["simulate", "--trace", "{d}/s_list.json", *SIM], "a sky_spot trace is a JSON object"),
    (["simulate", "--trace", "{d}/s_prlen.json", *SIM], "'prices' must be a list as long as 'data' (240), got 3"),
    (["simulate", "--trace", "{d}/s_frac.json", *SIM], "data[0] = 0.5 is not a whole number in 0..1e+09"),
    (["simulate", "--trace", "{d}/s_nan.json", *SIM], "data[2] = nan is not a whole number in 0..1e+09"),
    (["simulate", "--trace", "{d}/s_huge.json", "--json-convention", "available", *SIM],
     "data[1] = 1e+30 is not a whole number"),
    (["simulate", "--trace", "{d}/s_negq.json", *SIM], "components[0].quantity = -8 is not a number of GPUs > 0"),
    (["simulate", "--trace", "{d}/semi.csv", *SIM], "separated by commas (this file is separated by ';')"),
    (["simulate", "--trace", "{d}/upper.csv", *SIM], "(found 'Time', 'Zone', 'requested'"),
    (["simulate", "--trace", "{d}/s_counts.json", *SIM], "--json-convention available"),
    (["simulate", "--trace", "{d}/s_trunc.json", *SIM], "not valid JSON"),
    (["simulate", "--trace", "{d}/m_trunc.jsonl", *SIM], "m_trunc.jsonl: line 21: not valid JSON"),
    (["simulate", "--trace", "{d}/m_order.jsonl", *SIM], "snapshots must be in time order"),
    (["simulate", "--trace", "{d}/m_empty.jsonl", *SIM], "no snapshots (empty file)"),
    (["simulate", "--trace", "{d}/mp.jsonl", "--zone", "nope", *SIM], "no provider 'nope'"),
    # ---------------------------------------------------------------- paths of the wrong kind
    (["simulate", "--trace", "{d}", *SIM], "is a folder; expected a trace file"),
    (["simulate", "--trace", "{d}/absent.csv", *SIM], "absent.csv: no such file; expected a trace file"),
    (["simulate", "--trace", "nope", *SIM], "unknown market 'nope'"),
    ([*T, "--windows", "{d}", *SIM], "is a folder; expected a windows file"),
    ([*T, "--windows", "{d}/absent.csv", *SIM], "no such file; expected a windows file"),
    (["forecast", "--trace", "{d}", "--model", "persistence"], "is a folder; expected a trace file"),
    (["heldout", "{d}", "--out", "{d}/ho"], "is a folder; expected a trace file"),
    ([*SW, "{d}"], "is a folder; expected a grid file"),
    ([*SW, "{d}/absent.yaml"], "no such file; expected a grid file"),
    (["sweep", "{d}", "--grid", "{d}/g_ok.yaml", "--out", "{d}/sw"], "is a folder; expected a notebook"),
    (["cotune", "configs", "--runs", "{d}"], "is a folder; expected a runs file"),
    ([*CC, "--runs", "{d}", "--sources", "predicted"], "is a folder; expected a runs file"),
    ([*RE, "{d}/tidy.csv"], "tidy.csv is a file; expected a model folder"),
    ([*RE, "{d}/absent"], "model folder"),
    (["claims", "{d}/tidy.csv"], "tidy.csv is a file; expected the output folder of `spotlab reproduce`"),
    (["claims", "{d}/absent"], "no such folder; expected the output folder"),
    (["claims", "{d}/nothing"], "holds none of the notebooks' outputs"),
    (["claims", "{d}/foreign"], "README.md is not a claims report; it is left as it is"),
    (["reproduce", "--notebooks", "{d}/tidy.csv", "--out", "{d}/rep", "--build", "{d}/repb"],
     "tidy.csv is a file; expected a folder of notebooks"),
    # ---------------------------------------------------------------- outputs, checked before any work
    ([*T, *SIM, "--per-run", "{d}"], "is a folder; give a file name"),
    ([*T, *SIM, "--per-run", "{d}/x.xlsx"], "the file is written as .csv"),
    ([*T, *SIM, "--records", "/dev/full/x.csv"], "folder /dev/full is a file, not a folder"),
    ([*T, *SIM, "--per-run", "{d}/tidy.csv/x.csv"], "is a file, not a folder"),
    ([*T, *SIM, "--per-run", "{d}/nodir/x.csv"], "folder {d}/nodir does not exist"),
    ([*T, *SIM, "--per-run", "{d}/full.csv"], "--per-run {d}/full.csv: cannot write (No space left on device)"),
    # folders no one may write in, as root too (a chmod'ed folder binds only other users)
    ([*T, *SIM, "--per-run", "/proc/x.csv"], "--per-run /proc/x.csv: cannot write in /proc"),
    (["heldout", "calm", "--out", "/proc"], "--out /proc: cannot write in /proc"),
    ([*CC, "--results", "/sys/x.csv"], "--results /sys/x.csv: cannot write in /sys"),
    (["heldout", "calm", "--out", "{d}/tidy.csv"], "--out {d}/tidy.csv is a file; give a folder"),
    (["heldout", "calm", "--out", "/dev/full/x"], "a part of the path is a file, not a folder"),
    ([*SW, "{d}/g_ok.yaml", "--out", "{d}/tidy.csv"], "--out {d}/tidy.csv is a file; give a folder"),
    ([*SW, "{d}/g_ok.yaml", "--out", "{d}/sw", "--table", "{d}/x.xlsx"], "written as .csv or .csv.gz or .parquet"),
    (["reproduce", "--out", "{d}/tidy.csv"], "--out {d}/tidy.csv is a file; give a folder"),
    (["reproduce", "--out", "{d}/rep", "--build", "/dev/full/b"], "a part of the path is a file"),
    (["cotune", "configs", "--out", "{d}/tidy.csv"], "--out {d}/tidy.csv is a file; give a folder"),
    ([*CC, "--results", "{d}/x.json"], "--results {d}/x.json: the file is written as .csv"),
    ([*CC, "--results", "/dev/full/x.csv"], "folder /dev/full is a file, not a folder"),
    (["rl", "train", "--preset", "philly", "--trace", "philly-gpw", "--out", "{d}/tidy.csv"], "is a file; give a folder"),
    # ---------------------------------------------------------------- simulate: numbers, sizes, contradictions
    ([*T, "--policy", "greedy", "--restart-overhead-hours", "0", "--work-hours", "0", "--deadline-hours", "4"],
     "--work-hours must be > 0"),
    ([*T, "--policy", "greedy", "--restart-overhead-hours", "0", "--work-hours", "nan", "--deadline-hours", "4"],
     "--work-hours must be finite"),
    ([*T, "--policy", "greedy", "--restart-overhead-hours", "0", "--work-hours", "1e308", "--deadline-hours", "4"],
     "the job needs 1e+308 h"),
    ([*T, "--policy", "greedy", "--restart-overhead-hours", "0", "--work-hours", "2", "--deadline-hours", "1e300"],
     "the job's hard deadline needs 1e+300 slots"),
    ([*T, *SIM, "--slot-hours", "1e-300"], "more than the 1e+07 a market may hold"),
    ([*T, *SIM, "--slot-hours", "1e6"], "shorter than one slot of 1e+06 h"),
    ([*T, *SIM, "--stride-hours", "0.001", "--skip-hours", "0"], "stride_hours 0.001 h is shorter than one slot"),
    ([*T, *SIM, "--gpus-max", "1000000000000"], "gpus_max=1000000000000 is more than 100000 GPUs"),
    ([*T, *SIM, "--gpus-min", "4", "--gpus-max", "2"], "gpus_min=4 is above gpus_max=2"),
    ([*T, *SIM, "--gpus", "2", "--gpus-max", "4"], "give either --gpus N"),
    ([*T, *SIM, "--gpus", "2.5"], "'2.5' is not a whole number"),
    ([*T, *SIM, "--throughput-alpha", "1e-300"], "below the 0.001 the simulator resolves"),
    ([*T, *SIM, "--throughput-beta", "-5"], "H(1) = alpha*1 + beta = -4 must be > 0"),
    ([*T, *SIM, "--throughput-alpha", "-1", "--throughput-beta", "3", "--gpus-max", "4"], "H(4) = alpha*4 + beta = -1"),
    ([*T, *SIM, "--hard-deadline-hours", "3"], "must not be before the soft deadline"),
    ([*T, "--policy", "greedy", "--work-hours", "2", "--deadline-hours", "4", "--restart-overhead-hours", "1e9"],
     "impossible deadline"),
    ([*T, *SIM, "--seed", "-1"], "--seed must be >= 0"),
    ([*T, *SIM, "--param", "seed=abc"], "--param seed='abc' is not a whole number"),
    ([*T, *SIM[2:], "--policy", "chc", "--seed", "1", "--param", "seed=2"], "disagree; give one seed"),
    ([*T, *SIM, "--spot-share", "0"], "spot share must be > 0"),
    ([*T, *SIM, "--spot-share", "1e12"], "above 1e+09 USD per GPU-hour"),
    ([*T, *SIM, "--spot-share", "2", "--spot-price", "1"], "not both"),
    ([*T, *SIM, "--on-demand-price", "1e12"], "on-demand price must be at most 1e+09"),
    ([*T, *SIM, "--windows", "{d}/w_rev.csv", "--stride-hours", "3"], "give either --windows or --stride-hours"),
    ([*T, *SIM, "--skip-hours", "3"], "--skip-hours goes with --stride-hours"),
    ([*T, *SIM, "--stride-hours", "3", "--skip-hours", "1e9"], "start the jobs earlier (CLI: --skip-hours"),
    ([*T, *SIM, "--windows", "{d}/w_rev.csv"], "w_rev.csv: line 2: end_tick 10 is not after start_tick 20"),
    ([*T, *SIM, "--windows", "{d}/w_beyond.csv"], "end_tick 100000 is beyond the trace's 240 ticks"),
    ([*T, *SIM, "--windows", "{d}/w_neg.csv"], "start_tick = '-5' is not a non-negative whole number"),
    ([*T, *SIM, "--windows", "{d}/w_frac.csv"], "start_tick = '1.5' is not a non-negative whole number"),
    ([*T, *SIM, "--windows", "{d}/w_text.csv"], "start_tick = 'a' is not a non-negative whole number"),
    ([*T, *SIM, "--windows", "{d}/w_huge.csv"], "start_tick = '1e30' is not a non-negative whole number"),
    ([*T, *SIM, "--windows", "{d}/w_header.csv"], "no windows (header only)"),
    ([*T, *SIM, "--windows", "{d}/w_nocols.csv"], "missing column(s) start_tick, end_tick"),
    ([*T, *SIM, "--json-convention", "available"], "applies to sky_spot JSON traces only"),
    ([*T, *SIM, "--solver", "highs"], "--solver applies to policies that solve optimisation problems"),
    ([*T, *SIM[2:], "--policy", "chc", "--solver", "highs", "--param", "solver=glpk"], "disagree; give one"),
    ([*T, *SIM[2:], "--policy", "optimal", "--give-up"], "optimal is a hindsight plan"),
    ([*T, *SIM, "--give-up", "--safety-net", "off"], "with the net off"),
    ([*T, *SIM, "--no-timings"], "give --json too"),
    ([*T, *SIM, "--param", "x=1", "--param", "x=2"], "--param x is given twice (x=1 and x=2)"),
    ([*T, *SIM, "--param", "w"], "expected KEY=VALUE, got 'w'"),
    ([*T, *SIM, "--deadline", "5"], "unrecognized arguments: --deadline"),
    ([*T, *SIM[2:], "--policy", "nope"], "unknown policy 'nope'"),
    ([*T, *SIM[2:], "--policy", "chc", "--param", "w=0"], "chc: w must be a whole number >= 1"),
    ([*T, *SIM[2:], "--policy", "chc", "--param", "w=2.5"], "parameter w='2.5' is not a valid int"),
    ([*T, *SIM[2:], "--policy", "chc", "--param", "v=5", "--param", "w=3"], "v=5 cannot exceed the window w=3"),
    ([*T, *SIM[2:], "--policy", "chc", "--param", "predictor=nope"], "predictor must be 'oracle' or one of"),
    ([*T, *SIM[2:], "--policy", "chc", "--param", "mip_gap=nan"], "mip_gap must be a finite number in [0, 1)"),
    ([*T, *SIM[2:], "--policy", "chc", "--param", "train_hours=inf"], "train_hours must be a finite number"),
    ([*T, *SIM[2:], "--policy", "select", "--param", "pool=nope"], "select: unknown pool 'nope'"),
    ([*T, *SIM[2:], "--policy", "optimal", "--param", "n_jobs=0"], "n_jobs must be a non-zero whole number"),
    ([*T, *SIM[2:], "--policy", "optimal", "--param", "must_finish=maybe"], "must_finish='maybe' is not a valid bool"),
    ([*T, *SIM[2:], "--policy", "prediction_free", "--param", "theta=-1"], "theta must be a finite number >= 0"),
    # ---------------------------------------------------------------- forecast
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--horizons", "0"], "'0' is not a whole number"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--horizons", "a"], "'a' is not a whole number"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--horizons", "1000000000"], "too little history"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--train-hours", "0.0001"],
     "--train-hours 0.0001 is shorter than one slot of 1 h"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--train-hours", "1e9"], "too little history"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--refit-every", "0"], "must be >= 1"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "nope"], "unknown model 'nope'"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "ets", "--param", "nope=1"], "model 'ets' has no parameter"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "arima", "--param", "order=abc"], "order='abc' is not a valid"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "ets", "--param", "trend=1", "--param", "trend=0"],
     "--param trend is given twice"),
    (["forecast", "--trace", "{d}/t_nood.csv", "--model", "persistence", "--slot-hours", "100"], "too little history"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--json-convention", "available"],
     "applies to sky_spot JSON traces only"),
    (["forecast", "--trace", "{d}/tidy.csv", "--model", "persistence", "--no-timings"], "give --json too"),
    # ---------------------------------------------------------------- heldout
    ([*HO, "--job", "n_min=9"], "job field n_min=9 is more GPUs than market tidy.csv offers (8 requested)"),
    ([*HO, "--job", "n_min=2.5"], "job field n_min='2.5' is not a whole number"),
    ([*HO, "--job", "load=-0.5"], "job field load=-0.5 must be > 0"),
    ([*HO, "--job", "load=1.5"], "job field load=1.5 must be at most gamma="),
    ([*HO, "--job", "gamma=0.5"], "job field gamma=0.5 must be >= 1"),
    ([*HO, "--job", "beta=-5"], "job fields alpha=1.0, beta=-5.0: H("),
    ([*HO, "--job", "n_max=0"], "job field n_max=0 must be >= 1"),
    ([*HO, "--job", "deadline_h=nan"], "job field deadline_h=nan is not a finite number"),
    ([*HO, "--job", "value_factor=-1"], "job field value_factor=-1.0 must be >= 0"),
    ([*HO, "--job", "overhead_h=100"], "job shape 0 on market tidy.csv: impossible deadline"),
    ([*HO, "--job", "model=foo"], "job field model does not apply here"),
    ([*HO, "--job", "foo=1"], "unknown job field(s) foo"),
    ([*HO, "--job", "n_max=8", "--job", "n_max=4"], "--job n_max is given twice"),
    ([*HO, "--job", "nmax"], "expected KEY=VALUE, got 'nmax'"),
    (["heldout", "{d}/sky3d.json", "--out", "{d}/ho"],
     "the trace is 72 h long, too short for 168 h before the first job and one job of"),
    ([*HO, "--stride-hours", "1e-9"], "stride_hours 1e-09 h is shorter than one slot"),
    ([*HO, "--jobs", "0"], "must be >= 1"),
    ([*HO, "--jobs", "1000000"], "--jobs must be at most 10000"),
    ([*HO, "--w", "0"], "must be >= 1"),
    (["heldout", "{d}/tidy.csv", "{d}/tidy.csv", "--out", "{d}/ho"], "two markets have the same name"),
    (["heldout", "nope", "--out", "{d}/ho"], "unknown market 'nope'"),
    (["heldout", "{d}/tidy2.csv#nope", "--out", "{d}/ho"], "no zone 'nope'"),
    ([*HO, "--on-demand-price", "1e12"], "od_price must be at most 1e+09"),
    # ---------------------------------------------------------------- policies, sweep, reproduce
    (["policies", "nope"], "unknown policy 'nope'"),
    (["policies", "chc", "extra"], "unrecognized arguments: extra"),
    ([*SW, "{d}/g_unknown.yaml", "--out", "{d}/sw"], "does not define 'bogus' in its `parameters` cell"),
    ([*SW, "{d}/g_empty_list.yaml", "--out", "{d}/sw"], "parameter 'quick' has an empty list of values"),
    ([*SW, "{d}/g_scalar.yaml", "--out", "{d}/sw"], "must be a list of values, got True"),
    ([*SW, "{d}/garbage.bin", "--out", "{d}/sw"], "is not a text file"),
    ([*SW, "{d}/empty.csv", "--out", "{d}/sw"], "is empty"),
    ([*SW, "{d}/g_ok.yaml", "--out", "{d}/sw", "--jobs", "2", "--scheduler", "tcp://x:1"], "not both"),
    ([*SW, "{d}/g_ok.yaml", "--out", "{d}/sw", "--scheduler", "nope"], "should look like tcp://HOST:PORT"),
    (["sweep", "{d}/tidy.csv", "--grid", "{d}/g_ok.yaml", "--out", "{d}/sw"], "must be a jupytext percent .py file"),
    (["reproduce", "--jobs", "0"], "must be >= 1"),
    (["reproduce", "--only", "zz", "--out", "{d}/rep", "--build", "{d}/repb"], "whose names start with zz"),
    (["reproduce", "--jobs", "2", "--scheduler", "tcp://127.0.0.1:1", "--out", "{d}/rep", "--build", "{d}/repb"],
     "not both"),
    (["reproduce", "--scheduler", "nope", "--only", "00", "--out", "{d}/rep", "--build", "{d}/repb"],
     "should look like tcp://HOST:PORT"),
    (["reproduce", "--scheduler", "tcp://127.0.0.1:1", "--only", "00", "--out", "{d}/rep", "--build", "{d}/repb"],
     "cannot reach the Dask scheduler at tcp://127.0.0.1:1"),
    # ---------------------------------------------------------------- cotune
    (["cotune", "configs", "--objective", "fewest_gpus"], "--objective is what --recommend optimises"),
    (["cotune", "configs", "--runs", "{d}/r_bad.csv", "--n-runs", "100"], "give either --runs"),
    (["cotune", "configs", "--recommend", "a=1", "--recommend", "a=2"], "--recommend a is given twice"),
    (["cotune", "configs", "--sizes", "0"], "expected whole numbers >= 1"),
    (["cotune", "configs", "--n-runs", "10"], "--n-runs must be >= 20"),
    (["cotune", "configs", "--n-runs", "1000000000"], "--n-runs must be at most 1000000"),
    (["cotune", "configs", "--runs", "{d}/r_bad.csv"], "r_bad.csv: missing column(s)"),
    (["cotune", "configs", "--runs", "{d}/garbage.bin"], "unknown file type '.bin'"),
    (["cotune", "configs", "--runs", "{d}/empty.csv"], "the file is empty"),
    ([*CC, "--cluster", "garbage"], "cluster spec 'garbage'"),
    ([*CC, "--cluster", "A100-80GB:0x8"], "nodes must be a whole number >= 1"),
    ([*CC, "--part", "0.9:0.1"], "part must satisfy 0 <= a < b <= 1"),
    ([*CC, "--part", "nan:1"], "part must satisfy 0 <= a < b <= 1"),
    ([*CC, "--policies", "nope"], "unknown policy ['nope']"),
    ([*CC, "--sources", "nope"], "unknown configuration source"),
    ([*CC, "--runs", "{d}/r_bad.csv", "--sources", "user"], "add predicted to --sources"),
    ([*CC, "--train-runs", "1000000000"], "--train-runs must be at most 1000000"),
    ([*CC, "--policies", "rl_agent"], "--scheduler-param rl_agent.model=DIR"),
    ([*CC, "--scheduler-param", "rl_agent.model={d}"], "rl_agent is not among --policies"),
    ([*CC, "--policies", "rl_agent", "--scheduler-param", "rl_agent.model={d}/absent"], "does not exist"),
    ([*CC, "--policies", "rl_agent", "--scheduler-param", "rl_agent.model={d}/tidy.csv"], "is a file; expected"),
    ([*CC, "--policies", "sia", "--scheduler-param", "model=x"], "expected POLICY.KEY=VALUE"),
    ([*CC, "--policies", "sia", "--scheduler-param", "sia.window=abc"], "window='abc' is not a valid int"),
    ([*CC, "--policies", "sia", "--scheduler-param", "sia.nope=1"], "scheduler 'sia' has no parameter 'nope'"),
    ([*CC, "--policies", "sia", "--scheduler-param", "sia.window=3", "--scheduler-param", "sia.window=4"],
     "given twice"),
    # ---------------------------------------------------------------- rl
    ([*RT, "--slots", "1000000000"], "slots=1000000000: the agent never sees more queued jobs than a window holds"),
    ([*RT, "--minutes", "0"], "minutes must be > 0"),
    ([*RT, "--split-fractions", "0.5,0.5"], "expected three shares > 0 that sum to 1"),
    ([*RT, "--multi-gpu-share", "2"], "multi-GPU share must be at most 1"),
    ([*RT, "--baseline", "nope"], "unknown scheduler 'nope'"),
    ([*RT, "--placement", "nope"], "unknown placement 'nope'"),
    (["rl", "train", "--preset", "nope", "--trace", "philly-gpw", "--out", "{d}/rl"], "unknown cluster preset"),
    ([*RE, "{d}/absent", "--schedulers", ","], "give at least one name"),
    ([*RE, "{d}/absent", "--windows", "0"], "must be >= 1"),
]


def _ids(case) -> str:
    argv, _ = case
    return " ".join(a.replace("{d}/", "").replace("{d}", "DIR") for a in argv)[:90]


@pytest.mark.parametrize("argv, says", CASES, ids=[_ids(c) for c in CASES])
def test_a_bad_input_is_one_line_and_exit_2(d, capsys, argv, says):
    code, _, err = cli([a.format(d=d) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, f"want exactly one line on stderr, got:\n{err}"
    assert says.format(d=d) in lines[0], lines[0]
    assert "Traceback" not in err and "internal error" not in err


# ------------------------------------------------------------------------------------------ the Python front door

def _front_door_cases():
    from spotlab.jobs.job import make_job
    from spotlab.market.load import load_market
    from spotlab.market.windows import cut_windows
    from spotlab.policies.registry import make_policy
    from spotlab.policies.run import run_policy
    from spotlab.policies.semantics import semantics_for

    def ready(d):
        market = load_market(str(d / "tidy.csv"))
        return market, cut_windows(market, stride_hours=12, horizon_hours=4, skip_hours=0), make_job(2, 4)

    return [
        ("load_market(123)", lambda d: load_market(123), "source must be a trace path or a named market"),
        ("load_market(None)", lambda d: load_market(None), "got NoneType None"),
        ("load_market('')", lambda d: load_market(""), "source is an empty path"),
        ("load_market(folder)", lambda d: load_market(str(d)), "is a folder; expected a trace file"),
        ("big price in file", lambda d: load_market(str(d / "t_bigprice.csv")), "line 6 (zone z1): spot_price above"),
        ("calm hours=-1", lambda d: load_market("calm", hours=-1), "needs hours > 0"),
        ("calm hours=1e9", lambda d: load_market("calm", hours=1e9), "more than the 1e+07 a market may hold"),
        ("calm hours=nan", lambda d: load_market("calm", hours=math.nan), "hours must be a finite number"),
        ("calm seed=-1", lambda d: load_market("calm", seed=-1), "seed must be a whole number >= 0"),
        ("calm zone", lambda d: load_market("calm", zone="x"), "zone does not apply to it"),
        ("slot_hours=0", lambda d: load_market(str(d / "tidy.csv"), slot_hours=0), "slot_hours must be a finite"),
        ("slot_hours='1'", lambda d: load_market(str(d / "tidy.csv"), slot_hours="1"), "slot_hours must be a finite"),
        ("slot_hours=nan", lambda d: load_market(str(d / "tidy.csv"), slot_hours=math.nan), "slot_hours must be"),
        ("spot_price='1'", lambda d: load_market(str(d / "tidy.csv"), spot_price="1"), "spot_price must be a finite"),
        ("od_price=True", lambda d: load_market(str(d / "tidy.csv"), od_price=True), "od_price must be a finite"),
        ("od_price=1e12", lambda d: load_market(str(d / "tidy.csv"), od_price=1e12), "od_price must be at most 1e+09"),
        ("spot_share=0", lambda d: load_market(str(d / "tidy.csv"), spot_share=0), "spot_share must be > 0"),
        ("convention on a CSV", lambda d: load_market(str(d / "tidy.csv"), convention="available"),
         "applies to sky_spot JSON traces only"),
        ("convention='x'", lambda d: load_market(str(d / "sky.json"), convention="x"), "unknown JSON convention"),
        ("requested=0", lambda d: load_market(str(d / "sky.json"), requested=0), "requested must be a whole number"),
        ("requested=2.5", lambda d: load_market(str(d / "sky.json"), requested=2.5), "requested must be a whole"),
        ("requested on a CSV", lambda d: load_market(str(d / "tidy.csv"), requested=4), "a tidy CSV states how many"),
        ("cut_windows(str)", lambda d: cut_windows(str(d / "tidy.csv"), stride_hours=3, horizon_hours=4),
         "market must be a Market"),
        ("stride=0", lambda d: cut_windows(ready(d)[0], stride_hours=0, horizon_hours=4), "shorter than one slot"),
        ("stride='a'", lambda d: cut_windows(ready(d)[0], stride_hours="a", horizon_hours=4), "must be a number"),
        ("no horizon", lambda d: cut_windows(ready(d)[0], stride_hours=3), "needs the job's horizon"),
        ("horizon=0", lambda d: cut_windows(ready(d)[0], stride_hours=3, horizon_hours=0, skip_hours=0),
         "horizon_hours must be > 0"),
        ("horizon=nan", lambda d: cut_windows(ready(d)[0], stride_hours=3, horizon_hours=math.nan, skip_hours=0),
         "horizon_hours must be a finite number"),
        ("horizon='4'", lambda d: cut_windows(ready(d)[0], stride_hours=3, horizon_hours="4", skip_hours=0),
         "horizon_hours must be a number"),
        ("max_jobs=0", lambda d: cut_windows(ready(d)[0], stride_hours=3, horizon_hours=4, max_jobs=0),
         "max_jobs must be a whole number >= 1"),
        ("history=-1", lambda d: cut_windows(ready(d)[0], stride_hours=3, horizon_hours=4, history_hours=-1),
         "history_hours must be a finite number"),
        ("short trace", lambda d: cut_windows(ready(d)[0], stride_hours=3, horizon_hours=4, skip_hours=1e9),
         "start the jobs earlier"),
        ("windows and stride", lambda d: cut_windows(ready(d)[0], windows=str(d / "w_rev.csv"), stride_hours=3),
         "not both"),
        ("windows table without ticks", lambda d: cut_windows(ready(d)[0], windows=pd.DataFrame({"a": [1]})),
         "whole-number columns start_tick and end_tick"),
        ("windows table reversed", lambda d: cut_windows(ready(d)[0], windows=pd.DataFrame(
            {"start_tick": [5], "end_tick": [2]})), "window 0 [5, 2) is not a range of whole ticks"),
        ("make_job(0, 4)", lambda d: make_job(0, 4), "work must be > 0"),
        ("make_job('2', 4)", lambda d: make_job("2", 4), "work_hours must be a finite number, got '2'"),
        ("make_job(2, None)", lambda d: make_job(2, None), "deadline_hours must be a finite number, got None"),
        ("make_job gpus=2.5", lambda d: make_job(2, 4, gpus=2.5), "gpus must be a whole number of GPUs >= 1"),
        ("make_job gpus=True", lambda d: make_job(2, 4, gpus=True), "gpus must be a whole number"),
        ("make_job gpus_min > gpus_max", lambda d: make_job(2, 4, gpus_min=4, gpus_max=2), "gpus_min=4 is above"),
        ("make_job alpha tiny", lambda d: make_job(2, 4, alpha=1e-300), "scale alpha and beta up together"),
        ("make_job overhead -1", lambda d: make_job(2, 4, overhead_hours=-1), "overhead_hours must be >= 0"),
        ("make_job miss -1", lambda d: make_job(2, 4, miss_penalty=-1), "miss_penalty must be >= 0"),
        ("make_job value inf", lambda d: make_job(2, 4, value=math.inf), "value must be a finite number"),
        ("make_policy('nope')", lambda d: make_policy("nope"), "unknown policy 'nope'"),
        ("make_policy chc w=2.5", lambda d: make_policy("chc", {"w": 2.5}), "w must be a whole number >= 1"),
        ("make_policy chc w='abc'", lambda d: make_policy("chc", {"w": "abc"}), "w='abc' is not a valid int"),
        ("make_policy chc params list", lambda d: make_policy("chc", [1, 2]), "params must be a mapping"),
        ("make_policy unknown param", lambda d: make_policy("chc", {"nope": 1}), "has no parameter 'nope'"),
        ("make_policy give_up net off", lambda d: make_policy("greedy", safety_net="off", give_up=True),
         "with the net off"),
        ("run_policy('nope')", lambda d: run_policy("nope", {}, ready(d)[1], ready(d)[2], semantics_for(ready(d)[0])),
         "unknown policy 'nope'"),
        ("run_policy a policy object", lambda d: run_policy(make_policy("greedy"), {}, ready(d)[1], ready(d)[2],
                                                            semantics_for(ready(d)[0])), "policy is a registered name"),
        ("run_policy a market", lambda d: run_policy("greedy", {}, ready(d)[0], ready(d)[2],
                                                     semantics_for(ready(d)[0])), "episodes must be Episodes"),
        ("run_policy job None", lambda d: run_policy("greedy", {}, ready(d)[1], None, semantics_for(ready(d)[0])),
         "job must be a Job"),
        ("run_policy semantics str", lambda d: run_policy("greedy", {}, ready(d)[1], ready(d)[2], "spotlab"),
         "semantics must be a Semantics"),
        ("run_policy seed -1", lambda d: run_policy("greedy", {}, ready(d)[1], ready(d)[2],
                                                    semantics_for(ready(d)[0]), seed=-1), "seed must be a whole number"),
        ("run_policy too long a job", lambda d: run_policy("greedy", {}, ready(d)[1], make_job(2, 40),
                                                           semantics_for(ready(d)[0])), "the job's hard deadline needs"),
        ("semantics_for billing", lambda d: semantics_for(ready(d)[0], billing="nope"), "unknown billing 'nope'"),
        ("semantics_for net", lambda d: semantics_for(ready(d)[0], safety_net="nope"), "safety net must be one of"),
    ]


FRONT = _front_door_cases()


@pytest.mark.parametrize("call, says", [(c, s) for _, c, s in FRONT], ids=[n for n, _, _ in FRONT])
def test_a_bad_argument_in_python_is_a_spotlab_error(d, call, says):
    with pytest.raises(SpotlabError, match=re.escape(says)) as info:
        call(d)
    assert "\n" not in str(info.value)


# -------------------------------------------------------------------------- what a message alone cannot check

def test_a_window_past_the_horizon_plans_as_the_horizon_and_ends(d):
    """CHC's window, commitment and tail blocks past the job are cut to it: w=10**9 ends quickly, with w=horizon's
    numbers (it used to allocate gigabytes and run for minutes)."""
    from spotlab.jobs.job import make_job
    from spotlab.market.load import load_market
    from spotlab.market.windows import cut_windows
    from spotlab.policies.run import run_policy
    from spotlab.policies.semantics import semantics_for

    market = load_market(str(d / "tidy.csv"))
    job = make_job(3, 6, gpus_max=4, overhead_hours=0.1)
    episodes = cut_windows(market, stride_hours=24, horizon_hours=6, skip_hours=0, max_jobs=3)

    def run(**params):
        return run_policy("chc", {"predictor": "oracle", **params}, episodes, job, semantics_for(market)).metrics()

    assert run(w=10**9, v=10**9) == run(w=6, v=6)
    assert run(w=10**9) == run(w=6)
    assert run(blocks=10**9, method="milp") == run(blocks=24, method="milp")


def test_solvers_print_nothing_on_stdout(d, capfd):
    """The MILP solvers (GLPK, HiGHS through Pyomo) write no log to stdout: `--json` output stays JSON; a time limit
    beyond GLPK's C int of milliseconds is no limit, not an overflow."""
    for solver in ("glpk", "highs"):
        for policy in ("chc", "optimal"):
            code = main(["simulate", "--trace", str(d / "tidy.csv"), "--policy", policy, "--solver", solver,
                         "--param", "method=milp", "--param", "time_limit=1e300", "--work-hours", "3", "--deadline-hours", "4", "--gpus-max", "2",
                         "--restart-overhead-hours", "0.1", "--stride-hours", "1000", "--skip-hours", "0", "--json",
                         "--no-timings", "--no-progress"])
            out, err = capfd.readouterr()
            assert code == 0, err
            assert json.loads(out)["runs"] == 1 and err == ""


def test_bars_follow_the_progress_option(d, capsys):
    """Every bar, the library's included (the optimum's), follows --progress/--no-progress; by default it is drawn
    only when stderr is a terminal (here it is not)."""
    from spotlab.progress import set_default, shown, tqdm_bar

    args = ["simulate", "--trace", str(d / "tidy.csv"), "--policy", "optimal", "--work-hours", "2",
            "--deadline-hours", "4", "--restart-overhead-hours", "0", "--stride-hours", "6", "--skip-hours", "0",
            "--json"]
    assert cli(args, capsys)[2] == ""
    assert cli([*args, "--progress"], capsys)[2] != ""
    try:
        set_default(False)
        assert not shown() and tqdm_bar(range(3), enabled=None).disable and not tqdm_bar(enabled=True).disable
        set_default(True)
        assert shown() and not tqdm_bar(range(3)).disable
    finally:
        set_default(None)


def test_an_output_that_fills_up_after_the_check_is_one_line(d, capsys):
    """A disk that fills up during the run (a file symlinked to /dev/full) ends in one line, as root too."""
    code, _, err = cli(["simulate", "--trace", str(d / "tidy.csv"), *SIM, "--records", str(d / "full.csv")], capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"spotlab: error: --records {d / 'full.csv'}: cannot write (No space left on device)"]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes through a read-only mode")
def test_a_read_only_output_folder_is_found_before_the_work(d, capsys):
    ro = d / "read_only"
    ro.mkdir(exist_ok=True)
    ro.chmod(0o555)
    try:
        for argv in ([*T, *SIM, "--per-run", "{d}/read_only/x.csv"], ["heldout", "calm", "--out", "{d}/read_only"]):
            code, _, err = cli([a.format(d=d) for a in argv], capsys)
            assert code == 2 and len(err.strip().splitlines()) == 1 and "cannot write in" in err, err
    finally:
        ro.chmod(0o755)


def test_the_rl_agent_runs_in_the_cluster_experiment(d, capsys):
    """`cotune cluster --scheduler-param rl_agent.model=DIR` hands a trained agent to the rl_agent scheduler."""
    from spotlab.rl.train import TrainSettings, train
    from spotlab.rl.workload import Workload
    from tests.rl.test_env_and_training import synthetic_window

    windows = {"train": [synthetic_window(s, index=s) for s in range(2)]}
    settings = TrainSettings(workload=Workload(size=40), slots=8, n_steps=64, batch_size=32, n_epochs=1)
    train(settings, d / "agent", timesteps=64, windows=windows)
    code, out, err = cli(["cotune", "cluster", "--policies", "fifo,rl_agent", "--sources", "user", "--n-jobs", "20",
                          "--scheduler-param", f"rl_agent.model={d / 'agent'}", "--json"], capsys)
    if code == 2 and "was not found" in err:
        pytest.skip(f"the Alibaba trace is not available: {err.splitlines()[0]}")
    assert code == 0, err
    assert err == ""  # no progress bar: stderr is not a terminal here
    rows = json.loads(out)
    assert [r["policy"] for r in rows] == ["fifo", "rl_agent"] and all(r["jobs_done"] == 20 for r in rows)
