"""`spotlab.notebooks.reproduce --jobs 2` runs notebooks side by side, each in its own kernel, and reports a failing one by
name with a non-zero exit; the others' outputs are kept. With `--scheduler` on a two-worker Dask cluster: the local
numbers, and a run that resumes after a killed worker or client without running a notebook twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spotlab.notebooks.execute import ROOT

NOTEBOOK = """# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec: {{display_name: Python 3, language: python, name: python3}}
# ---

# %% tags=["parameters"]
out_dir = "."
quick = False

# %%
import os
from pathlib import Path
{body}
Path(out_dir, "{name}.txt").write_text("{name}")
Path(out_dir, "{name}.threads").write_text(os.environ.get("OMP_NUM_THREADS", "unset"))
Path(out_dir, "{name}.cwd").write_text(os.getcwd())
"""


def _write(folder: Path, name: str, body: str = "") -> None:
    (folder / f"{name}.py").write_text(NOTEBOOK.format(name=name, body=body))


BURN = """
import time
from joblib import Parallel, delayed

def burn(seconds):  # CPU time, whatever else runs on the machine
    t = time.process_time()
    while time.process_time() - t < seconds:
        pass

Parallel(n_jobs=2)(delayed(burn)(1.5) for _ in range(2))
"""


def test_two_notebooks_at_once(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name in ("01_a", "02_b", "03_c"):
        _write(nbs, name, body=BURN if name == "01_a" else "")
    # a relative --out: papermill's change of the process's folder must not send the log and report elsewhere
    cmd = [sys.executable, "-m", "spotlab", "reproduce", "--notebooks", str(nbs), "--out", "out",
           "--build", str(tmp_path / "build"), "--quick", "--jobs", "2", "--no-html", "--no-progress"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "out").glob("*.txt")) == ["01_a.txt", "02_b.txt", "03_c.txt"]
    assert (tmp_path / "out" / "README.md").exists() and not (ROOT / "out").exists()
    assert {p.read_text() for p in (tmp_path / "out").glob("*.cwd")} == {str(ROOT)}  # kernels run in the root
    log = json.loads((tmp_path / "out" / "reproduce_log.json").read_text())
    assert [r["notebook"] for r in log["notebooks"]] == ["01_a", "02_b", "03_c"]
    # the CPU time of a kernel and its joblib workers: 01_a's two workers burnt 1.5 s each
    cpu = {r["notebook"]: r["cpu_seconds"] for r in log["notebooks"]}
    assert cpu["01_a"] - cpu["02_b"] >= 2.5 and cpu["02_b"] > 0, cpu
    assert log["cpu_seconds"] == pytest.approx(sum(cpu.values()), abs=0.2)
    assert "s of CPU in the notebooks run); figures and data in out/" in run.stdout
    # side by side, each kernel's thread pools get its share of the cores (a variable set by the user stays)
    share = os.environ.get("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // 2)))
    assert {p.read_text() for p in (tmp_path / "out").glob("*.threads")} == {share}

    _write(nbs, "04_bad", body="raise ValueError('broken on purpose')")
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 1
    assert "notebook 04_bad.py failed: ValueError: broken on purpose" in run.stderr
    # the notebook's message, not papermill's report of the cell's traceback (the executed copy keeps that)
    assert "Traceback" not in run.stderr and "Cell In" not in run.stderr


def test_long_notebooks_start_first(tmp_path):
    """Two at a time, the long notebooks go first: by an earlier run's recorded times when there is one for
    every notebook, else the known long ones (full runs) and then by name."""
    import json
    from pathlib import Path

    from spotlab.notebooks.reproduce import LONG_FIRST, LONG_FIRST_QUICK, _longest_first

    names = sorted({"00_a", "01_b", *LONG_FIRST, *LONG_FIRST_QUICK, "05_c"})
    sources = [Path(f"{n}.py") for n in names]
    log = tmp_path / "reproduce_log.json"
    rest = [n for n in names if n not in LONG_FIRST]
    assert [s.stem for s in _longest_first(sources, log, quick=False)] == [*LONG_FIRST, *rest]
    rest = [n for n in names if n not in LONG_FIRST_QUICK]
    assert [s.stem for s in _longest_first(sources, log, quick=True)] == [*LONG_FIRST_QUICK, *rest]
    times = {n: float(i) for i, n in enumerate(sorted(names))}
    log.write_text(json.dumps({"quick": False, "notebooks": [{"notebook": n, "seconds": t} for n, t in times.items()]}))
    assert [s.stem for s in _longest_first(sources, log, quick=False)] == sorted(names, key=lambda n: -times[n])
    assert [s.stem for s in _longest_first(sources, log, quick=True)][:len(LONG_FIRST_QUICK)] == list(
        LONG_FIRST_QUICK)  # another mode's log is not used


def test_the_long_notebooks_named_first_exist():
    """A renamed notebook would silently drop out of the start order of a fresh clone."""
    from pathlib import Path

    from spotlab.notebooks.reproduce import LONG_FIRST, LONG_FIRST_QUICK, notebook_sources

    stems = {s.stem for s in notebook_sources(Path(__file__).parents[2] / "notebooks")}
    assert set(LONG_FIRST) | set(LONG_FIRST_QUICK) <= stems


def test_kernel_threads_split_the_cores():
    from spotlab.notebooks.reproduce import kernel_threads

    assert kernel_threads(jobs=2, notebooks=10, cores=2) == 1
    assert kernel_threads(jobs=2, notebooks=10, cores=8) == 4
    assert kernel_threads(jobs=4, notebooks=10, cores=2) == 1  # never below one
    assert kernel_threads(jobs=2, notebooks=1, cores=8) is None  # a kernel alone: the default
    assert kernel_threads(jobs=1, notebooks=10, cores=8) is None


# --- on a Dask cluster (`--scheduler`): two workers on 127.0.0.1 (the `cluster` fixture of conftest.py) -------

SLEEPY = """# ---
# jupyter:
#   kernelspec: {{display_name: Python 3, language: python, name: python3}}
# ---

# %% tags=["parameters"]
out_dir = "."
quick = False

# %%
import os
import time
from pathlib import Path

with open(Path(out_dir, "{name}.starts"), "a") as f:
    f.write(f"{{os.getpid()}}\\n")
time.sleep({sleep})
Path(out_dir, "{name}.txt").write_text("{name}")
"""


def _reproduce(*args, cwd=None, **kw) -> subprocess.Popen:
    import signal

    return subprocess.Popen([sys.executable, "-m", "spotlab", "reproduce", "--no-progress", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **kw)


def _without_timings(value):
    """A file's numbers without the wall times a run measures (they differ between any two runs)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "seconds" and not k.endswith("_seconds")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _numbers(out: Path) -> dict:
    import pandas as pd

    got = {}
    for path in sorted(out.glob("*.csv")):
        frame = pd.read_csv(path)
        got[path.name] = frame.drop(columns=[c for c in frame.columns if c == "seconds" or c.endswith("_seconds")])
    for path in sorted(out.glob("*.json")):
        if path.name != "reproduce_log.json":
            got[path.name] = _without_timings(json.loads(path.read_text()))
    return got


def _wait(cond, timeout: float, what: str, run: subprocess.Popen) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not cond():
        if run.poll() is not None:
            pytest.fail(f"the run ended (exit {run.returncode}) before {what}: {run.communicate()[1][-1000:]}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.slow
def test_quick_notebooks_on_a_cluster_give_the_local_numbers(tmp_path, cluster, dataset, cbl_trace):
    """The two fastest notebooks, --quick, on two workers: the same files and numbers as two local kernels, each
    notebook run on a worker (both used) and the timing table in the claims report says which."""
    import pandas as pd

    dataset("markets/gcp_a100_counts.csv.gz")
    common = ["--quick", "--only", "00", "01b", "--no-html"]
    local = _reproduce(*common, "--jobs", "2", "--out", tmp_path / "L", "--build", tmp_path / "LB")
    out, err = local.communicate(timeout=300)
    assert local.returncode == 0, err
    dist = _reproduce(*common, "--scheduler", cluster.address, "--out", tmp_path / "C", "--build", tmp_path / "CB")
    out, err = dist.communicate(timeout=300)
    assert dist.returncode == 0, err
    want, got = _numbers(tmp_path / "L"), _numbers(tmp_path / "C")
    assert sorted(want) == sorted(got) and len(want) > 5
    for name, value in want.items():
        if isinstance(value, pd.DataFrame):
            pd.testing.assert_frame_equal(got[name], value, check_exact=True, obj=name)
        else:
            assert got[name] == value, name
    log = json.loads((tmp_path / "C" / "reproduce_log.json").read_text())
    where = {r["notebook"]: r["where"] for r in log["notebooks"]}
    assert set(where) == {"00_throughput_profiles", "01b_cant_be_late_crosscheck"}
    assert all(w.startswith("tcp://127.0.0.1:") for w in where.values()) and len(set(where.values())) == 2
    report = (tmp_path / "C" / "README.md").read_text()
    for name, w in where.items():
        assert f"| {name} |" in report and w in report


CELLS = """# ---
# jupyter:
#   kernelspec: {{display_name: Python 3, language: python, name: python3}}
# ---

# %% tags=["parameters"]
out_dir = "."
quick = False

# %%
import json
import os
from pathlib import Path

from joblib import Parallel, delayed


def cell(i):
    import os
    import sys
    where = "local"
    if "distributed" in sys.modules:
        from distributed import get_worker
        try:
            where = get_worker().address
        except ValueError:
            pass
    return i * i, os.getpid(), where


got = Parallel(n_jobs=2)(delayed(cell)(i) for i in range(6))
Path(out_dir, "{name}.csv").write_text("i,square\\n" + "".join(f"{{i}},{{sq}}\\n" for i, (sq, _, _) in enumerate(got)))
Path(out_dir, "{name}.where").write_text(json.dumps({{"kernel": os.getpid(), "cells": [[p, w] for _, p, w in got]}}))
"""


@pytest.mark.slow
def test_a_notebooks_cells_run_on_the_cluster(tmp_path, cluster):
    """On a cluster of two one-thread workers, two notebooks at once each send their joblib cells to the workers
    (none waits for a thread the notebooks hold) and write what a local run writes."""
    import pandas as pd

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name in ("50_a", "51_b"):
        (nbs / f"{name}.py").write_text(CELLS.format(name=name))
    local = _reproduce("--notebooks", nbs, "--out", tmp_path / "L", "--build", tmp_path / "LB", "--no-html",
                       "--jobs", "2")
    _, err = local.communicate(timeout=300)
    assert local.returncode == 0, err
    dist = _reproduce("--notebooks", nbs, "--out", tmp_path / "C", "--build", tmp_path / "CB", "--no-html",
                      "--scheduler", cluster.address)
    out, err = dist.communicate(timeout=300)
    assert dist.returncode == 0, err
    for name in ("50_a", "51_b"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "C" / f"{name}.csv"),
                                      pd.read_csv(tmp_path / "L" / f"{name}.csv"), check_exact=True)
        ran = json.loads((tmp_path / "C" / f"{name}.where").read_text())
        assert all(w.startswith("tcp://127.0.0.1:") and p != ran["kernel"] for p, w in ran["cells"]), ran
        here = json.loads((tmp_path / "L" / f"{name}.where").read_text())
        assert all(w == "local" for _, w in here["cells"])


@pytest.mark.slow
def test_a_cluster_run_resumes_after_a_killed_worker_and_a_killed_client(tmp_path, cluster):
    """A worker killed mid-notebook: its notebook runs again on another worker. The client killed (SIGKILL):
    it leaves no process, the notebooks running on the workers finish there, and the rerun runs only the rest
    (waiting for those still running rather than starting them twice); afterwards no kernel is left."""
    import os
    import signal

    from spotlab.processes import descendants

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    names = [f"0{i}_s" for i in range(1, 7)]
    for name in names:
        (nbs / f"{name}.py").write_text(SLEEPY.format(name=name, sleep=4))
    out, build = tmp_path / "out", tmp_path / "build"
    args = ["--notebooks", nbs, "--out", out, "--build", build, "--quick", "--no-html", "--scheduler", cluster.address]

    def starts(name: str) -> int:
        path = out / f"{name}.starts"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def running() -> list[str]:
        return [n for n in names if starts(n) and not (out / f"{n}.txt").exists()]

    # 1. a worker dies (with its kernel) while both run a notebook: the cluster runs that one again elsewhere
    run = _reproduce(*args[:6], "--only", "01", "02", *args[6:])
    try:
        _wait(lambda: len(running()) == 2, 60, "two notebooks running", run)
        cluster.kill("w1")
        cluster.start_worker("w3")
        stdout, stderr = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 0, stderr
    assert sorted(starts(n) for n in names[:2]) == [1, 2]  # the killed one started again, the other once
    assert all((out / f"{n}.txt").exists() for n in names[:2])

    # 2. the client is killed while two notebooks run and others wait: nothing of it stays
    run = _reproduce(*args, start_new_session=True)
    try:
        _wait(lambda: len(running()) == 2, 60, "two notebooks running", run)
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(10)
    finally:
        run.kill()
    with pytest.raises(ProcessLookupError):
        os.killpg(run.pid, 0)  # no process of the client's group is left
    rerun = _reproduce(*args)
    stdout, stderr = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, stderr
    assert all((out / f"{n}.txt").exists() for n in names)
    assert [starts(n) for n in names[2:]] == [1, 1, 1, 1]  # none of the later ones ran twice
    log = {r["notebook"]: r for r in json.loads((out / "reproduce_log.json").read_text())["notebooks"]}
    assert log["01_s"]["status"] == log["02_s"]["status"] == "cached"
    assert all(r["where"].startswith("tcp://127.0.0.1:") for r in log.values())

    def kernels() -> list[int]:
        pids = [p for proc in cluster.procs.values() for p in descendants(proc.pid)]
        return [p for p in pids if b"ipykernel" in _cmdline(p)]

    # 3. a notebook that fails on a worker is named with its own error, as in a local run
    (nbs / "07_bad.py").write_text(SLEEPY.format(name="07_bad", sleep="0)\nraise ValueError('broken on purpose'"))
    bad = _reproduce(*args)
    stdout, stderr = bad.communicate(timeout=120)
    assert bad.returncode == 1 and "notebook 07_bad.py failed: ValueError: broken on purpose" in stderr, stderr

    import time

    deadline = time.monotonic() + 30
    while kernels():
        assert time.monotonic() < deadline, "kernels left on the workers"
        time.sleep(0.2)


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""
