"""Kill the parent, then look for its children: Ctrl-C (SIGINT) and SIGTERM end a long command with one line on
stderr, and no worker process it started (joblib's loky workers, papermill's kernels) goes on running.

Each case starts the command in its own session, waits until it has child processes, signals the parent only
(as a time-out or `kill PID` would), and then checks every process that was its descendant.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spotlab.processes import descendants

GCP = "markets/gcp_h100_probes.csv.gz"
SLEEPY = textwrap.dedent('''\
    # ---
    # jupyter:
    #   kernelspec: {display_name: Python 3, language: python, name: python3}
    # ---

    # %% tags=["parameters"]
    out_dir = "out"
    quick = False
    seconds = 120

    # %%
    import time

    time.sleep(seconds)
    ''')


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _interrupt(cmd: list[str], sig: int, want: int, cwd: Path | None = None, timeout: float = 90.0,
               group: bool = False, settle_s: float = 1.0):
    """Run `cmd`, wait for `want` descendants and `settle_s` more seconds, send `sig` to the parent (`group`: to
    its whole process group, as Ctrl-C in a terminal does); returns (rc, stderr, children, seconds)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + timeout
        kids: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            kids = descendants(proc.pid)
            if len(kids) >= want:
                break
            time.sleep(0.25)
        assert proc.poll() is None, f"the command ended before it was interrupted: {proc.stderr.read()}"
        assert len(kids) >= want, f"expected {want} child processes, found {kids}"
        time.sleep(settle_s)
        assert proc.poll() is None, f"the command ended before it was interrupted: {proc.stderr.read()}"
        kids = sorted(set(kids) | set(descendants(proc.pid)))
        sent = time.monotonic()
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(k) for k in kids):
            time.sleep(0.1)
        return proc.returncode, err, kids, took
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _check(rc: int, err: str, kids: list[int], took: float, line: str) -> None:
    assert rc == (143 if "SIGTERM" in line else 130), err  # the shell's convention: 128 + the signal
    assert err.strip().splitlines() == [line], f"want exactly one line on stderr, got:\n{err}"
    left = [k for k in kids if _alive(k)]
    assert not left, f"processes left running after the parent stopped: {left}"
    assert took < 15, f"stopping took {took:.1f} s"


@pytest.mark.slow
@pytest.mark.parametrize("sig, how", [(signal.SIGTERM, "stopped by SIGTERM"), (signal.SIGINT, "interrupted")])
def test_simulate_leaves_no_joblib_worker(dataset, sig, how):
    trace = dataset(GCP)
    cmd = [sys.executable, "-m", "spotlab", "simulate", "--trace", trace, "--zone", "us-central1-a",
           "--slot-hours", "1", "--work-hours", "24", "--deadline-hours", "8", "--hard-deadline-hours", "10",
           "--gpus-min", "2", "--gpus-max", "8", "--throughput-alpha", "1", "--throughput-beta", "0.5",
           "--restart-overhead-hours", "0.2", "--value", "300", "--miss-penalty", "100", "--stride-hours", "6",
           "--policy", "select", "--param", "pool=quick", "--param", "n_jobs=2", "--json"]
    _check(*_interrupt(cmd, sig, want=2), f"spotlab simulate: {how}")


@pytest.mark.slow
@pytest.mark.parametrize("sig, group, how", [(signal.SIGTERM, False, "stopped by SIGTERM"),
                                             (signal.SIGINT, True, "interrupted")])
def test_reproduce_leaves_no_kernel(tmp_path, sig, group, how):
    nbs = tmp_path / "notebooks"
    nbs.mkdir()
    (nbs / "01_sleep.py").write_text(SLEEPY)
    cmd = [sys.executable, "-m", "spotlab", "reproduce", "--notebooks", "notebooks", "--out", "out", "--build", "build"]
    _check(*_interrupt(cmd, sig, want=1, cwd=tmp_path, group=group),
           f"spotlab reproduce: {how}; finished notebooks are kept, run it again to resume")


@pytest.mark.slow
def test_sweep_leaves_no_worker_nor_kernel(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / "sleep.py").write_text(SLEEPY)
    (tmp_path / "grid.yaml").write_text("seconds: [100, 101]\n")
    cmd = [sys.executable, "-m", "spotlab", "sweep", str(tmp_path / "sleep.py"), "--grid", str(tmp_path / "grid.yaml"),
           "--jobs", "2", "--out", str(tmp_path / "sweep")]
    rc, err, kids, took = _interrupt(cmd, signal.SIGTERM, want=4)  # 2 loky workers, each with a kernel
    _check(rc, err, kids, took, "spotlab sweep: stopped by SIGTERM")


@pytest.mark.slow
def test_long_chc_run_stops_on_sigterm(tmp_path):
    """A CHC run with a window far past the job (clamped to its horizon, so it neither fills the memory nor ends
    soon) stops on SIGTERM within seconds, with one line: no solver or model-builder log of the stop."""
    import numpy as np
    import pandas as pd

    n = 6 * 24 * 10  # ten days of 10-minute slots
    t = pd.date_range("2025-01-01", periods=n, freq="10min", tz="UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    avail = np.tile(np.r_[np.ones(30), np.zeros(30)], n // 60 + 1)[:n].astype(int)
    pd.DataFrame({"time": t, "zone": "z", "requested": 1, "available": avail, "spot_price": 1.0,
                  "on_demand_price": 3.0}).to_csv(tmp_path / "trace.csv", index=False)
    cmd = [sys.executable, "-m", "spotlab", "simulate", "--trace", str(tmp_path / "trace.csv"), "--policy", "chc",
           "--param", "w=100000", "--param", "predictor=oracle", "--work-hours", "48", "--deadline-hours", "52",
           "--restart-overhead-hours", "0.1", "--json"]
    _check(*_interrupt(cmd, signal.SIGTERM, want=0, settle_s=8.0), "spotlab simulate: stopped by SIGTERM")
