"""Progress of long runs: a bar on stderr when it is a terminal (or when asked), stages and elapsed time, nothing
otherwise; one rule so that every command, and every bar of the library below it, shows progress the same way.

`shown(enabled)` is the rule: an explicit True/False, else the command line's `--progress/--no-progress`
(`set_default`), else whether stderr is a terminal. `tqdm_bar` is the library's bar under that rule: the terminal
bar, or in a Jupyter kernel with ipywidgets its widget (tqdm.auto warns in a kernel without ipywidgets).
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import threading
from typing import Any, Iterator

_default: bool | None = None  # the command line's --progress/--no-progress, for every bar it leads to


def set_default(enabled: bool | None) -> None:
    """What a bar asked with `enabled=None` does in this process: shown (True), hidden (False) or, None, shown
    when stderr is a terminal. The command line sets it from `--progress/--no-progress`."""
    global _default
    _default = None if enabled is None else bool(enabled)


def shown(enabled: bool | None = None) -> bool:
    """Whether a bar asked with `enabled` is drawn (the module's rule)."""
    if enabled is not None:
        return bool(enabled)
    if _default is not None:
        return _default
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def _in_kernel_with_widgets() -> bool:
    ipython = sys.modules.get("IPython")
    try:
        kernel = ipython is not None and "IPKernelApp" in ipython.get_ipython().config
    except AttributeError:
        kernel = False
    return bool(kernel) and importlib.util.find_spec("ipywidgets") is not None


def tqdm_bar(iterable: Any = None, *, enabled: bool | None = None, **kwargs: Any) -> Any:
    """A tqdm bar (same arguments) drawn under the module's rule: `enabled` None follows the command line's
    choice, else the terminal."""
    if _in_kernel_with_widgets():
        from tqdm.notebook import tqdm
    else:
        from tqdm import tqdm
    return tqdm(iterable, disable=not shown(enabled), **kwargs)


class _NoBar:
    """What `Progress` drives when no bar is shown."""

    disable = True
    n = 0

    def update(self, n: float = 1) -> None:
        self.n += n

    def reset(self, total: float | None = None) -> None:
        self.n = 0

    def refresh(self) -> None:
        pass

    def set_description_str(self, text: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


class Progress:
    """A tqdm bar on stderr whose elapsed time keeps moving even while one long step runs (a solver, a
    model fit): a user sees that the command works and for how long, and the step it is in.

    `enabled=None` follows the command line's --progress, else shows it when stderr is a terminal (`shown`);
    `stage(text)` names the current step.
    """

    def __init__(self, total: float | None = None, desc: str = "", unit: str = "it",
                 enabled: bool | None = None) -> None:
        if shown(enabled):
            from tqdm import (
                tqdm,  # the terminal bar: tqdm.auto's notebook detection costs 50 ms of start-up
            )

            self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=False)
        else:
            self.bar = _NoBar()  # not even tqdm's import (40 ms) when nothing is shown
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        if not self.bar.disable:
            self._beat = threading.Thread(target=self._refresh, daemon=True)
            self._beat.start()

    def _refresh(self) -> None:
        while not self._stop.wait(1.0):
            with contextlib.suppress(Exception):
                self.bar.refresh()

    def stage(self, text: str) -> None:
        self.bar.set_description_str(text, refresh=True)

    def update(self, n: float = 1) -> None:
        self.bar.update(n)

    def set(self, n: float) -> None:
        """Move the bar to `n` (never backwards)."""
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=2.0)
        self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextlib.contextmanager
def progress(total: float | None = None, desc: str = "", unit: str = "it",
             enabled: bool | None = None) -> Iterator[Progress]:
    bar = Progress(total, desc, unit, enabled)
    try:
        yield bar
    finally:
        bar.close()
