"""A unit of work for a back end (`local.py`, `dask_cluster.py`): a key, a function and its arguments.

The function must be importable by name (a module-level function) so that a Dask worker can run it, and must
write its own results to disk (a folder all workers see): the back end only hands each outcome to the caller's
`on_done(key, result, error)`, in this process, as tasks finish. `on_done` returns True to stop: the tasks not
started yet are dropped (the running ones finish). Outcomes of failed tasks come with `result` None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

OnDone = Callable[[str, Any, BaseException | None], bool | None]


@dataclass(frozen=True)
class Task:
    """`fn(*args)` under the name `key` (unique within a run)."""

    key: str
    fn: Callable[..., Any]
    args: tuple = ()
