"""The experiment-cell runner: stable keys, rows appended as cells finish, resume after a kill (whole cells
only, no worker left behind), parallel = serial, seeds recorded, foreign files refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.errors import ExperimentError, SpotlabError
from spotlab.experiments.cells import Cell, Table, cell_key, run
from spotlab.processes import descendants


def cells(n: int, seed: int = 7) -> list[Cell]:
    return [Cell("demo", {"i": i, "scale": 10}, {"i": i}, seed) for i in range(n)]


def compute(cell: Cell) -> pd.DataFrame:
    """Three rows per cell, from a generator seeded by the cell's seed and index."""
    rng = np.random.default_rng([cell.seed, cell.params["i"]])
    return pd.DataFrame({"part": [0, 1, 2], "value": cell.params["scale"] * rng.random(3)})


def table(path: Path) -> Table:
    return Table(path, key="key", rows=lambda c: 3)


# ----------------------------------------------------------------------------------------------- keys


def test_key_is_stable():
    # a fixed payload has a fixed key: a change here would orphan every results file written before
    assert cell_key({"policy": "chc", "params": {"w": 6, "v": 2}, "seed": 0}) == "7dce28d409766b33"
    assert cell_key({"a": 1}, length=12) == cell_key({"a": 1})[:12]
    assert cell_key({"a": 1}) != cell_key({"a": 2}) != cell_key({"b": 1})


@settings(max_examples=50, derandomize=True, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(-10**6, 10**6), min_size=1, max_size=6))
def test_key_ignores_order_and_number_types(params):
    reordered = dict(reversed(list(params.items())))
    as_numpy = {k: np.int64(v) for k, v in params.items()}
    as_tuple = {"x": tuple(params.values())}
    assert cell_key(params) == cell_key(reordered) == cell_key(as_numpy)
    assert cell_key(as_tuple) == cell_key({"x": list(params.values())})


# ------------------------------------------------------------------------------------------- running


def test_rows_are_appended_as_cells_finish(tmp_path):
    path = tmp_path / "r.csv"
    seen = []

    def watching(cell: Cell) -> pd.DataFrame:
        seen.append(len(pd.read_csv(path)) if path.is_file() else 0)
        return compute(cell)

    out = run(cells(4), watching, table(path))
    assert seen == [0, 3, 6, 9]  # each cell found the rows of the cells before it already in the file
    saved = pd.read_csv(path, dtype={"key": str})
    assert list(saved.columns) == ["part", "value", "i", "key", "seed"]  # labels, key and seed recorded
    assert (saved["seed"] == 7).all() and saved["key"].tolist() == [c.key for c in cells(4) for _ in range(3)]
    pd.testing.assert_frame_equal(pd.concat(out, ignore_index=True), saved, check_dtype=False)


def test_resume_reuses_whole_cells_only(tmp_path):
    path = tmp_path / "r.csv"
    first = run(cells(4), compute, table(path))
    rows = pd.read_csv(path)
    rows.drop(index=[10, 11]).to_csv(path, index=False)  # the last cell cut short
    calls = []

    def counting(cell: Cell) -> pd.DataFrame:
        calls.append(cell.params["i"])
        return compute(cell)

    again = run(cells(5), counting, table(path))
    assert calls == [3, 4]
    for a, b in zip(first, again):
        pd.testing.assert_frame_equal(a, b, check_dtype=False)
    # another seed is another cell: nothing reused
    calls.clear()
    run(cells(2, seed=8), counting, table(path))
    assert calls == [0, 1]
    calls.clear()
    run(cells(2), counting, table(path), resume=False)
    assert calls == [0, 1]


def test_parallel_gives_the_serial_results(tmp_path):
    serial = run(cells(6), compute, table(tmp_path / "s.csv"))
    parallel = run(cells(6), compute, table(tmp_path / "p.csv"), n_jobs=2)
    for a, b in zip(serial, parallel):
        pd.testing.assert_frame_equal(a, b)
    order = ["i", "part"]
    s = pd.read_csv(tmp_path / "s.csv").sort_values(order, ignore_index=True)
    p = pd.read_csv(tmp_path / "p.csv").sort_values(order, ignore_index=True)
    pd.testing.assert_frame_equal(s, p)


def test_supersede_replaces_a_recomputed_cells_rows(tmp_path):
    path = tmp_path / "r.csv"
    t = Table(path, key="key", rows=lambda c: 3, supersede=("i",))
    run(cells(3), compute, t)
    run(cells(2, seed=9), compute, t)  # cells 0 and 1 again, with another seed
    saved = pd.read_csv(path)
    assert len(saved) == 9 and saved.groupby("i")["seed"].unique().map(list).to_dict() == {0: [9], 1: [9], 2: [7]}


def test_seed_and_labels_are_checked(tmp_path):
    with pytest.raises(ExperimentError, match="seed"):
        run(cells(1), lambda c: compute(c).assign(seed=3))
    with pytest.raises(ExperimentError, match="i = "):
        run(cells(1), lambda c: compute(c).assign(i=5))


def test_bad_input_is_one_clear_error(tmp_path):
    foreign = tmp_path / "x.csv"
    pd.DataFrame({"a": [1]}).to_csv(foreign, index=False)
    with pytest.raises(ExperimentError, match="not a results file of demo"):
        run(cells(1), compute, Table(foreign, required=("key",), owner="demo"))
    other = tmp_path / "y.csv"
    pd.DataFrame({"b": [1]}).to_csv(other, index=False)
    with pytest.raises(ExperimentError, match="other columns"):
        run(cells(1), compute, Table(other, columns=("part", "value", "i", "seed")))
    with pytest.raises(ExperimentError, match="the same"):
        run(cells(2) + cells(1), compute)
    with pytest.raises(ExperimentError, match="n_jobs"):
        run(cells(1), compute, n_jobs=0)
    with pytest.raises(ExperimentError, match="DataFrame"):
        run(cells(1), lambda c: [1, 2])
    assert issubclass(ExperimentError, SpotlabError)


def test_a_torn_last_line_is_dropped(tmp_path):
    path = tmp_path / "r.csv"
    run(cells(2), compute, table(path))
    with open(path, "ab") as f:
        f.write(b"0,0.123")  # a write cut short
    calls = []
    run(cells(3), lambda c: calls.append(c.params["i"]) or compute(c), table(path))
    assert calls == [2]
    assert len(pd.read_csv(path)) == 9


# --------------------------------------------------------------------------------------- killed runs

CHILD = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    import numpy as np, pandas as pd
    from spotlab.experiments.cells import Cell, Table, run
    from spotlab.processes import stop_on_sigterm

    stop_on_sigterm()
    path, n_jobs = Path(sys.argv[1]), int(sys.argv[2])

    def compute(cell):
        if cell.params["i"] >= 2:
            time.sleep(60)  # the cells in flight when the run is stopped
        rng = np.random.default_rng([cell.seed, cell.params["i"]])
        return pd.DataFrame({"part": [0, 1, 2], "value": cell.params["scale"] * rng.random(3)})

    cells = [Cell("demo", {"i": i, "scale": 10}, {"i": i}, 7) for i in range(6)]
    run(cells, compute, Table(path, key="key", rows=lambda c: 3), n_jobs=n_jobs, progress=False)
''')


def _start(tmp_path: Path, n_jobs: int) -> tuple[subprocess.Popen, Path]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    path = tmp_path / "r.csv"
    proc = subprocess.Popen([sys.executable, str(script), str(path), str(n_jobs)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.is_file() and len(pd.read_csv(path)) == 6 and (n_jobs == 1 or len(descendants(proc.pid)) >= n_jobs):
            return proc, path
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the child did not finish its first two cells in time")


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_killed_run_keeps_its_finished_cells_and_resumes(tmp_path):
    proc, path = _start(tmp_path, 1)
    proc.kill()
    proc.wait(timeout=30)
    assert len(pd.read_csv(path)) == 6  # the two finished cells, nothing of the one in flight
    calls = []
    out = run(cells(6), lambda c: calls.append(c.params["i"]) or compute(c), table(path))
    assert calls == [2, 3, 4, 5]
    clean = run(cells(6), compute, table(tmp_path / "clean.csv"))
    for a, b in zip(out, clean):
        pd.testing.assert_frame_equal(a, b, check_dtype=False)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_sigterm_ends_the_workers_of_a_parallel_run(tmp_path):
    proc, path = _start(tmp_path, 2)
    workers = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in workers if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"worker processes left running: {left}"
    saved = pd.read_csv(path)
    assert len(saved) == 6 and sorted(saved["i"].unique()) == [0, 1]
