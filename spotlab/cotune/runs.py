"""Old import path, kept for existing code: the history of fine-tuning runs are `spotlab.cotune.run_history`."""

import sys

from . import run_history

sys.modules[__name__] = run_history
