"""`spotlab.notebooks.reproduce --jobs 2` runs notebooks side by side, each in its own kernel, and reports a failing one by
name with a non-zero exit; the others' outputs are kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_two_notebooks_at_once(tmp_path):
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name in ("01_a", "02_b", "03_c"):
        _write(nbs, name)
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


def test_kernel_threads_split_the_cores():
    from spotlab.notebooks.reproduce import kernel_threads

    assert kernel_threads(jobs=2, notebooks=10, cores=2) == 1
    assert kernel_threads(jobs=2, notebooks=10, cores=8) == 4
    assert kernel_threads(jobs=4, notebooks=10, cores=2) == 1  # never below one
    assert kernel_threads(jobs=2, notebooks=1, cores=8) is None  # alone (notebook 10 at the end): the default
    assert kernel_threads(jobs=1, notebooks=10, cores=8) is None
