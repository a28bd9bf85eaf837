"""Old import path of the data catalogue, kept for existing code: it is `spotlab.catalogue`."""

import sys

from . import catalogue

sys.modules[__name__] = catalogue
