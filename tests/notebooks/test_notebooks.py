"""Every notebook executes under papermill with its quick parameters and writes figures + data."""

from __future__ import annotations

from pathlib import Path

import pytest

from spotlab.notebooks.execute import ROOT
from spotlab.notebooks.reproduce import notebook_sources, run_notebook

NOTEBOOKS = notebook_sources(ROOT / "notebooks")


@pytest.mark.slow
@pytest.mark.parametrize("src", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_quick(src: Path, tmp_path: Path, dataset):
    dataset("markets/gcp_a100_counts.csv.gz")  # skip cleanly where the real data is absent
    out = tmp_path / "figures"
    rec = run_notebook(src, tmp_path / "build", out, quick=True, html_dir=out)
    assert rec["status"] == "ran"
    prefix = src.stem.split("_")[0]
    pngs = list(out.glob(f"{prefix}_*.png"))
    tables = list(out.glob(f"{prefix}_*.csv")) + list(out.glob(f"{prefix}_*.json"))
    assert pngs, f"{src.name} wrote no figure"
    assert tables, f"{src.name} wrote no data behind its figures"
    executed = tmp_path / "build" / "executed" / f"{src.stem}.ipynb"
    assert executed.exists()
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, f"the executed {src.stem} shows no figure (inline backend)"
    html = out / f"{src.stem}.html"
    assert html.exists() and "<img" in html.read_text(), "no readable HTML page with the figures"
    assert not (ROOT / "notebooks" / f"{src.stem}.ipynb").exists(), "notebooks must not be executed in place"
    if prefix in ("03", "04", "05", "06", "07", "08", "09"):  # the experiments report headline numbers to `spotlab sweep`
        import json

        result = json.loads((out / "sweep_result.json").read_text())
        assert result and all(isinstance(v, (int, float, str, bool)) or v is None for v in result.values())


def test_relative_out_dir_is_under_the_project_root(tmp_path, monkeypatch):
    """JupyterLab runs a notebook in notebooks/: its figures must still land in the root's paper_figures/."""
    from spotlab.experiments.figures import project_path

    monkeypatch.chdir(ROOT / "notebooks")
    assert project_path("paper_figures") == ROOT / "paper_figures"
    assert project_path(tmp_path / "x") == tmp_path / "x"
    for src in NOTEBOOKS:
        text = src.read_text()
        assert 'matplotlib.use("Agg")' not in text, f"{src.name} hides its figures from the notebook"
        assert "project_path(out_dir)" in text, f"{src.name} writes relative to where it runs"


@pytest.mark.parametrize("src", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_parameters_cell_is_read_whole_by_papermill(src: Path, caplog):
    """papermill reads each parameter, its default and its comment (`papermill --help-notebook`, sweeps); a line
    it cannot parse is dropped from that help with a warning on every run."""
    import logging

    import jupytext
    from papermill.translators import PythonTranslator

    cells = [c for c in jupytext.read(src).cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, f"{src.name} needs exactly one cell tagged parameters"
    with caplog.at_level(logging.WARNING, logger="papermill"):
        params = PythonTranslator.inspect(cells[0])
    assert not caplog.records, caplog.records[0].getMessage()
    assert {"out_dir", "quick"} <= {p.name for p in params}
