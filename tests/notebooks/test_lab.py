"""The project's JupyterLab set-up without a browser: the settings `make` installs, and the contents manager
that gives a text notebook its kernel metadata (so that opening it does not mark it modified)."""

from __future__ import annotations

import asyncio
import json

import pytest

from spotlab.notebooks.execute import ROOT

pytest.importorskip("jupyter_server")
pytest.importorskip("jupytext")


def test_settings_make_jupytext_notebooks_the_default_viewer():
    overrides = json.loads((ROOT / "jupyterlab-settings" / "overrides.json").read_text())
    assert overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["python"] == "Jupytext Notebook"
    server = json.loads((ROOT / "jupyterlab-settings" / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["contents_manager_class"] == "spotlab.notebooks.lab.NotebookContentsManager"
    makefile = (ROOT / "Makefile").read_text()
    assert "overrides.json" in makefile and "jupyter_server_config.json" in makefile


def test_a_text_notebook_is_read_with_its_kernel_metadata(tmp_path):
    from ipykernel.ipkernel import IPythonKernel

    from spotlab.notebooks.lab import NotebookContentsManager

    src = (ROOT / "notebooks" / "00_throughput_profiles.py").read_text()
    (tmp_path / "nb.py").write_text(src)
    cm = NotebookContentsManager(root_dir=str(tmp_path))
    model = asyncio.run(cm.get("nb.py", content=True, type="notebook"))
    meta = model["content"]["metadata"]
    assert meta["language_info"] == dict(IPythonKernel.language_info)
    assert meta["kernelspec"]["name"] == "python3" and meta["kernelspec"]["display_name"]
    assert (tmp_path / "nb.py").read_text() == src  # reading changes nothing on disk
