"""JupyterLab for this project: the contents manager that `make setup` configures (`jupyterlab-settings/`).

Jupytext's manager opens `notebooks/*.py` as notebooks; this one also gives such a notebook, as it is read,
the metadata that JupyterLab would otherwise write into it the moment its kernel starts: the kernel's
`language_info` and the installed kernelspec's display name. A text notebook does not store them (they
depend on the Python version), so without this every notebook was marked modified as soon as it opened.
The file on disk is not touched: jupytext leaves `language_info` out of the text when it saves.
"""

from __future__ import annotations

import functools
from typing import Any

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupyter_server.utils import ensure_async
from jupytext.async_contentsmanager import build_async_jupytext_contents_manager_class


@functools.lru_cache(maxsize=None)
def _kernel_metadata(name: str) -> tuple[str | None, dict | None]:
    """(display name, language_info) of kernel `name` when it is this environment's IPython kernel."""
    try:
        from jupyter_client.kernelspec import KernelSpecManager

        spec = KernelSpecManager().get_kernel_spec(name)
    except Exception:  # no such kernel: leave the notebook as it is
        return None, None
    info = None
    if spec.language == "python":
        from ipykernel.ipkernel import IPythonKernel

        info = dict(IPythonKernel.language_info)
    return spec.display_name, info


def complete_metadata(model: dict[str, Any]) -> dict[str, Any]:
    """Fill in a notebook model's kernel display name and language_info from its kernel (in place)."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return model
    meta = model["content"].setdefault("metadata", {})
    spec = meta.get("kernelspec") or {}
    if not spec.get("name"):
        return model
    display, info = _kernel_metadata(spec["name"])
    if display:
        meta["kernelspec"] = {**spec, "display_name": display}
    if info and "language_info" not in meta:
        meta["language_info"] = info
    return model


class NotebookContentsManager(build_async_jupytext_contents_manager_class(AsyncLargeFileManager)):
    """Jupytext's contents manager, with `complete_metadata` applied to every notebook it reads."""

    async def get(self, path: str, content: bool = True, type: str | None = None, format: str | None = None,
                  **kwargs: Any) -> dict:
        model = await ensure_async(super().get(path, content=content, type=type, format=format, **kwargs))
        return complete_metadata(model)
