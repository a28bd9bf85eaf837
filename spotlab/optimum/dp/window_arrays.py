"""One window's availability and prices as the single-window DPs read them (`work_lattice.py`,
`pareto_labels.py`): the first T slots, checked, so that a bad trace is a clear `SolverError`."""

from __future__ import annotations

import numpy as np

from ...errors import SolverError


def window_arrays(T: int, avail, spot_price, od_price) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first `T` slots of one window's availability and prices, checked (finite, non-negative prices)."""
    avail = np.asarray(avail)[:T]
    sp = np.asarray(spot_price, dtype=float)[:T]
    od = np.asarray(od_price, dtype=float)[:T]
    if avail.shape != (T,) or sp.shape != (T,) or od.shape != (T,):
        raise SolverError(f"the window needs {T} slots of availability and prices")
    for label, arr in (("spot price", sp), ("on-demand price", od)):
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise SolverError(f"the {label} must be a finite non-negative value for each of the {T} slots")
    return avail, sp, od
