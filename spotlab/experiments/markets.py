"""Old import path, kept for existing code: the descriptive statistics of spot markets are
`spotlab.experiments.market_stats`."""

import sys

from . import market_stats

sys.modules[__name__] = market_stats
