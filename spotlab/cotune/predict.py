"""Old import path, kept for existing code: the configuration models are `spotlab.cotune.config_models`."""

import sys

from . import config_models

sys.modules[__name__] = config_models
