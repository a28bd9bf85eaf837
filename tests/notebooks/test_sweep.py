"""`spotlab sweep`: every point runs to completion exactly once, serially, on joblib and on a real Dask
cluster that loses a worker or its client mid-sweep; failures are recorded and retried; bad inputs
fail before anything runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from spotlab.errors import SweepError
from spotlab.notebooks.sweep.grid import load_grid, point_hash
from spotlab.notebooks.backends.leases import CLAIM_FILE, holder_gone
from spotlab.notebooks.sweep.point import KERNEL_LOG, prepare_notebook, run_point
from spotlab.notebooks.sweep.record import RECORD_FILE
from spotlab.notebooks.sweep.run import run_sweep

from .conftest import free_port

NOTEBOOK = '''# %% tags=["parameters"]
x = 1
k = 1
fail_on = -1
sleep_s = 0.0
out_dir = "."

# %%
import json
import pathlib
import time

out = pathlib.Path(out_dir)
with open(out / "starts.txt", "a") as f:
    f.write("start\\n")
time.sleep(sleep_s)
if x == fail_on:
    raise ValueError(f"x is {x}, the point set to fail")
(out / "sweep_result.json").write_text(json.dumps({"y": x * x * k}))

# %%
with open(out / "completions.txt", "a") as f:  # the very end: one line per run that got this far
    f.write("done\\n")
'''


@pytest.fixture
def nb(tmp_path) -> Path:
    path = tmp_path / "tiny.py"
    path.write_text(NOTEBOOK)
    return path


def grid_file(tmp_path: Path, text: str, name: str = "grid.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def point_dirs(out: Path) -> dict[str, Path]:
    return {p.name: p for p in (out / "points").iterdir() if p.is_dir()}


def check_each_done_once(out: Path, n: int) -> None:
    dirs = point_dirs(out)
    assert len(dirs) == n
    for key, d in dirs.items():
        rec = json.loads((d / RECORD_FILE).read_text())
        assert rec["status"] == "done" and rec["hash"] == key
        done = lines(d / "completions.txt")
        assert done == 1, f"point {rec['params']} completed {done} times"
        assert not (d / CLAIM_FILE).exists()


def cli(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spotlab", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_grid_and_hash(tmp_path):
    g = load_grid(grid_file(tmp_path, "x: [1, 2, 3]\nk: [1, 2]\nfixed:\n  fail_on: 7\n"))
    assert len(g.points()) == 6 and g.fixed == {"fail_on": 7}
    assert point_hash({"x": 1, "k": 2}) == point_hash({"k": 2, "x": 1}) != point_hash({"x": 1, "k": 1})
    assert point_hash({"x": 1}) != point_hash({"x": 1.0}) != point_hash({"x": "1"})
    assert len({point_hash(p) for p in g.points()}) == 6


@pytest.mark.parametrize("jobs", [1, 2])
def test_local_sweep_runs_every_point_once_and_resumes(tmp_path, nb, jobs):
    grid = grid_file(tmp_path, "x: [1, 2, 3]\nk: [1, 2]\n")
    out = tmp_path / "out"
    res = run_sweep(nb, grid, out, jobs=jobs, progress=False)
    assert (res.done, res.failed, res.missing, res.ran, res.skipped) == (6, 0, 0, 6, 0) and res.ok
    check_each_done_once(out, 6)
    table = res.table.set_index(["x", "k"])
    for x in (1, 2, 3):
        for k in (1, 2):
            assert table.loc[(x, k), "y"] == x * x * k and table.loc[(x, k), "status"] == "done"
            assert table.loc[(x, k), "hash"] == point_hash({"x": x, "k": k})
    assert res.table_path == out.resolve() / "sweep.csv" and len(res.table_path.read_text().splitlines()) == 7
    again = run_sweep(nb, grid, out, jobs=jobs, progress=False)
    assert (again.done, again.ran, again.skipped) == (6, 0, 6)
    check_each_done_once(out, 6)


def test_failed_point_is_recorded_and_retried(tmp_path, nb):
    out = tmp_path / "out"
    grid = grid_file(tmp_path, "x: [1, 2, 3]\nfixed:\n  fail_on: 2\n")
    p = cli("sweep", nb, "--grid", grid, "--out", out, "--jobs", 2, "--no-progress")
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    bad = out / "points" / point_hash({"x": 2})
    rec = json.loads((bad / RECORD_FILE).read_text())
    assert rec["status"] == "failed" and rec["error"] == "ValueError: x is 2, the point set to fail"
    assert rec["params"] == {"fail_on": 2, "x": 2} and rec["seconds"] > 0 and rec["started"] and rec["finished"]
    assert "x is 2" in p.stdout and "1 failed" in p.stdout and "--retry-failed" in p.stdout
    assert (bad / KERNEL_LOG).is_file()  # the kernel process's own chatter goes there, not to the terminal
    for x in (1, 3):
        assert json.loads((out / "points" / point_hash({"x": x}) / RECORD_FILE).read_text())["status"] == "done"

    p = cli("sweep", nb, "--grid", grid, "--out", out, "--no-progress")  # resume: failed points stay failed
    assert p.returncode == 1 and lines(bad / "starts.txt") == 1

    grid.write_text("x: [1, 2, 3]\nfixed:\n  fail_on: -1\n")  # the fix
    p = cli("sweep", nb, "--grid", grid, "--out", out, "--retry-failed", "--no-progress")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ran 1" in p.stdout
    assert lines(bad / "starts.txt") == 2
    check_each_done_once(out, 3)
    for x in (1, 3):
        assert lines(out / "points" / point_hash({"x": x}) / "starts.txt") == 1
    rows = (out / "sweep.csv").read_text().splitlines()
    assert rows[0].split(",") == ["hash", "fail_on", "x", "status", "error", "seconds", "y"] and len(rows) == 4


@pytest.mark.parametrize("case, grid_text, expect", [
    ("missing notebook", "x: [1]\n", "no such file; expected a notebook"),
    ("bad yaml", "x: [1, 2\n", "not valid YAML"),
    ("unknown parameter", "x: [1]\nbogus: [1, 2]\n", "does not define 'bogus'"),
    ("empty list", "x: []\n", "empty list"),
    ("empty grid", "", "is empty"),
    ("only fixed", "fixed:\n  x: 1\n", "sweeps no parameter"),
    ("scalar", "x: 3\n", "must be a list"),
    ("duplicate", "x: [1, 1]\n", "twice"),
    ("reserved", "x: [1]\nfixed:\n  out_dir: /tmp\n", "set by the sweep"),
])
def test_bad_inputs_fail_before_running(tmp_path, nb, case, grid_text, expect):
    grid = grid_file(tmp_path, grid_text)
    notebook = tmp_path / "nope.py" if case == "missing notebook" else nb
    out = tmp_path / "out"
    p = cli("sweep", notebook, "--grid", grid, "--out", out, timeout=60)
    assert p.returncode == 2, p.stderr
    assert p.stderr.startswith("spotlab: error:") and expect in p.stderr and "Traceback" not in p.stderr
    assert not (out / "points").exists()


def test_parquet_table(tmp_path, nb):
    grid = grid_file(tmp_path, "x: [2]\n")
    table = tmp_path / "t.parquet"
    import importlib.util

    if importlib.util.find_spec("pyarrow") is None:
        with pytest.raises(SweepError, match="needs pyarrow"):
            run_sweep(nb, grid, tmp_path / "out", table=table, progress=False)
        assert not (tmp_path / "out").exists()
        return
    import pandas as pd

    run_sweep(nb, grid, tmp_path / "out", table=table, progress=False)
    assert pd.read_parquet(table)["y"].tolist() == [4]


def test_ipynb_notebook(tmp_path, nb):
    import jupytext

    ipynb = tmp_path / "tiny.ipynb"
    jupytext.write(jupytext.read(nb), ipynb)
    res = run_sweep(ipynb, {"x": [3], "fixed": {"k": 2}}, tmp_path / "out", progress=False)
    assert res.ok and res.table["y"].tolist() == [18]


def test_bad_options(tmp_path, nb):
    grid = grid_file(tmp_path, "x: [1]\n")
    with pytest.raises(SweepError, match="not both"):
        run_sweep(nb, grid, tmp_path / "o", jobs=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(SweepError, match="none.yaml: no such file; expected a grid file"):
        run_sweep(nb, tmp_path / "none.yaml", tmp_path / "o")
    with pytest.raises(SweepError, match="is a folder; expected a grid file"):
        run_sweep(nb, tmp_path, tmp_path / "o")
    with pytest.raises(SweepError, match="cannot reach the Dask scheduler"):
        run_sweep(nb, grid, tmp_path / "o", scheduler=f"tcp://127.0.0.1:{free_port()}", progress=False)


def test_second_attempt_waits_for_a_live_claim(tmp_path, nb):
    """A duplicated task (a rescheduled one, or an overlapping sweep) must not run a point being run."""
    point = tmp_path / "p"
    point.mkdir()
    (point / CLAIM_FILE).write_text(f"{socket.gethostname()}:{os.getppid()}:x")  # a live process holds it
    got = {}
    t = threading.Thread(target=lambda: got.update(run_point(str(nb), {"x": 1}, "k", str(point), str(tmp_path))))
    t.start()
    time.sleep(1.5)
    assert t.is_alive() and not (point / "starts.txt").exists()
    (point / RECORD_FILE).write_text(json.dumps({"status": "done", "hash": "k", "params": {"x": 1}}))
    (point / CLAIM_FILE).unlink()
    t.join(10)
    assert got["ran"] is False and not (point / "starts.txt").exists()


def test_dead_claim_is_taken_over(tmp_path, nb):
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()  # a pid that is gone
    point = tmp_path / "p"
    point.mkdir()
    (point / CLAIM_FILE).write_text(f"{socket.gethostname()}:{p.pid}:x")
    assert holder_gone((point / CLAIM_FILE).read_text())
    ipynb, _ = prepare_notebook(nb, tmp_path / "nb")
    out = run_point(str(ipynb), {"x": 3}, "k", str(point), str(tmp_path))
    assert out["ran"] and out["record"]["results"] == {"y": 9} and lines(point / "completions.txt") == 1


def running_points(out: Path) -> list[Path]:
    if not (out / "points").exists():
        return []
    return [d for d in point_dirs(out).values() if (d / "starts.txt").exists() and not (d / RECORD_FILE).exists()]


def wait_until(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_dask_sweep_survives_a_killed_worker_and_an_interrupted_client(tmp_path, nb, cluster):
    # points of 5 s: the worker must die while its point sleeps, before the point's last cell. With 1.5 s, on a
    # loaded machine the point could finish its notebook between being seen running and the kill, and was then
    # rightly run again (its result was not recorded), which this test would read as a point run twice
    grid = grid_file(tmp_path, "x: [1, 2, 3, 4, 5, 6]\nfixed:\n  sleep_s: 5\n")
    args = ["sweep", nb, "--grid", grid, "--scheduler", cluster.address, "--no-progress"]

    # 1. a worker is killed (with the kernel it runs) while both workers run a point
    out = tmp_path / "out1"
    sweep = subprocess.Popen([sys.executable, "-m", "spotlab", *map(str, args), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: len(running_points(out)) == 2, 60, "two points running")
        cluster.kill("w1")
        cluster.start_worker("w3")
        stdout, stderr = sweep.communicate(timeout=120)
    finally:
        sweep.kill()
    assert sweep.returncode == 0, stdout + stderr
    check_each_done_once(out, 6)
    assert max(lines(d / "starts.txt") for d in point_dirs(out).values()) == 2  # the killed point started again
    res = run_sweep(nb, grid, out, scheduler=cluster.address, progress=False)  # resume: nothing left to run
    assert (res.done, res.ran, res.skipped) == (6, 0, 6)
    assert sorted(res.table["y"]) == [x * x for x in range(1, 7)]
    check_each_done_once(out, 6)

    # 2. the sweep itself is interrupted; the points its workers were running finish there, the resume
    #    runs only the others and none twice
    #    (12 points, so that on a loaded machine the interrupt still lands well before the end)
    out = tmp_path / "out2"
    grid = grid_file(tmp_path, "x: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\nfixed:\n  sleep_s: 1.5\n")
    args = ["sweep", nb, "--grid", grid, "--scheduler", cluster.address, "--no-progress"]
    # pytest-xdist workers ignore SIGINT and children inherit that: give the sweep the default handling back
    sweep = subprocess.Popen([sys.executable, "-m", "spotlab", *map(str, args), "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_until(lambda: len(running_points(out)) == 2 and any((d / RECORD_FILE).exists()
                                                                  for d in point_dirs(out).values()),
                   60, "a finished point and two running")
        sweep.send_signal(signal.SIGINT)
        sweep.communicate(timeout=60)
    finally:
        sweep.kill()
    assert sweep.returncode == 130
    res = run_sweep(nb, grid, out, scheduler=cluster.address, progress=False)
    assert res.ok and res.done == 12 and res.ran < 12
    check_each_done_once(out, 12)
    assert all(lines(d / "starts.txt") == 1 for d in point_dirs(out).values())


SLOW_CELLS = '''# %% tags=["parameters"]
out_dir = "."
pause = 1.5

# %%
import time

time.sleep(pause)

# %%
time.sleep(pause)

# %%
time.sleep(pause)

# %%
time.sleep(pause)
'''


def test_progress_bar_moves_while_the_first_point_runs(tmp_path):
    """The bar counts a running point's finished cells: it leaves 0 long before the first point is done."""
    path = tmp_path / "slow.py"
    path.write_text(SLOW_CELLS)
    grid = grid_file(tmp_path, "pause: [1.5]\n")
    p = cli("sweep", path, "--grid", grid, "--out", tmp_path / "out", "--progress")
    assert p.returncode == 0, p.stderr
    shown = [float(v) for v in __import__("re").findall(r"\| ([0-9.]+)/1 points", p.stderr)]
    assert any(0 < v < 1 for v in shown), f"no partial progress in the bar: {p.stderr[-500:]}"
