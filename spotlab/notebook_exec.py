"""What `make reproduce` and `spotlab sweep` share to execute a notebook: the folder notebooks run from
(the project root, so relative paths in them mean the same everywhere) and a kernel manager that keeps the
kernel's own output out of the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def kernel_manager_logging_to(log: Path) -> type:
    """A kernel manager whose kernel writes its process-level stdout/stderr to `log`.

    The kernel app logs a TCP warning and the shutdown interrupt of every point, and a race in ipykernel's
    shutdown sometimes logs a zmq traceback; none of it is the point's result (that is in the executed copy
    and the record), so it goes to the point's folder instead of the sweep's terminal.
    """
    from jupyter_client.manager import AsyncKernelManager

    class PointKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            with open(log, "ab") as out:
                kw.setdefault("stdout", out)
                kw.setdefault("stderr", out)
                await super()._async_launch_kernel(kernel_cmd, **kw)

    return PointKernelManager
