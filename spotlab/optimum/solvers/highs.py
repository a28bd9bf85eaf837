"""HiGHS instances that print nothing: the solver behind the optimum, CHC's windows and the MILP placement."""

from __future__ import annotations

import os
import sys


def quiet_highs():
    """A `highspy.Highs` with its output off. HiGHS prints its banner to the process's stdout (file descriptor 1,
    below Python) when the first instance is built, before any option can be set; that line would corrupt a
    command's JSON output, so stdout is pointed at /dev/null while the instance is built."""
    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    h.setOptionValue("output_flag", False)
    return h
