"""HiGHS prints a banner on stdout when its first instance is built; spotlab's instances print nothing, so a
command's JSON output stays JSON. Run in a fresh process: the banner comes only once per process."""

from __future__ import annotations

import subprocess
import sys


def test_quiet_highs_prints_nothing_even_for_the_first_instance():
    code = "from spotlab.optimum.solvers.highs import quiet_highs\nh = quiet_highs()\nh.run()\nprint('only this')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "only this\n"
