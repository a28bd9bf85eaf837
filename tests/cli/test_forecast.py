"""`spotlab forecast`: the JSON contract on a real trace and one-line errors on bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

V100 = "markets/aws_v100_p3.2xlarge.csv.gz"
V100_16 = "markets/aws_v100_16node_counts.csv.gz"


def run(*args):
    return subprocess.run([sys.executable, "-m", "spotlab", "forecast", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def v100(dataset):
    return dataset(V100)


@pytest.mark.parametrize("model", ["persistence", "duration", "ets"])
def test_json_contract(v100, model):
    p = run("--trace", v100, "--zone", "us-east-1a", "--model", model, "--horizons", "1,2,3,6,12",
            "--slot-hours", 1.0, "--train-hours", 96, "--refit-every", 24, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["horizons"] == [1, 2, 3, 6, 12]
    for key in ("model", "persistence"):
        assert [r["h"] for r in out[key]] == [1, 2, 3, 6, 12]
        assert all(set(r) == {"h", "mae", "rmse"} and r["mae"] <= r["rmse"] + 1e-12 for r in out[key])
    assert out["n_forecasts"] > 100
    assert out["train_slots"] == 96 and out["refit_every"] == 24 and out["slot_hours"] == 1.0
    assert out["zone"] == "us-east-1a" and out["target"] == "availability" and isinstance(out["params"], dict)
    if model == "persistence":
        assert out["model"] == out["persistence"]


def test_price_target_and_params(v100):
    p = run("--trace", v100, "--zone", "us-west-2a", "--target", "price", "--model", "duration",
            "--param", "min_count=10", "--slot-hours", 1.0, "--horizons", "1,6", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["target"] == "price" and out["params"]["min_count"] == 10 and len(out["model"]) == 2


@pytest.mark.parametrize("args, msg", [
    (["--model", "nope"], "unknown model"),
    (["--model", "duration", "--horizons", "0,2"], "horizons"),
    (["--model", "duration", "--horizons", "a"], "horizons"),
    (["--model", "duration", "--train-hours", 100000], "too little history"),
    (["--model", "duration", "--param", "bogus=1"], "no parameter"),
    (["--model", "duration", "--zone", "mars-1a"], "no zone"),
])
def test_bad_inputs(v100, args, msg):
    if "--zone" not in args:
        args = [*args, "--zone", "us-east-1a"]
    p = run("--trace", v100, *args, "--slot-hours", 1.0, "--json")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert lines[-1].startswith("spotlab: error:") and msg in lines[-1] and "Traceback" not in p.stderr


def test_price_on_a_trace_without_prices(dataset):
    p = run("--trace", dataset(V100_16), "--zone", "us-east-2b", "--target", "price", "--model", "ets", "--json")
    assert p.returncode == 2 and "no spot price" in p.stderr and "Traceback" not in p.stderr


def test_bad_files(tmp_path):
    junk = tmp_path / "junk.csv"
    junk.write_text("not,a\ntrace,at all\n")
    for path in (tmp_path / "missing.csv", junk, tmp_path):
        p = run("--trace", path, "--model", "persistence", "--json")
        assert p.returncode == 2 and p.stderr.startswith("spotlab: error:") and "Traceback" not in p.stderr
