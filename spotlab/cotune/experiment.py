"""Old import path, kept for existing code: CoTune's cluster experiment is `spotlab.experiments.cotune_cluster`
(experiments hold what the notebooks compute; CoTune holds configuration knowledge)."""

import sys

from ..experiments import cotune_cluster

sys.modules[__name__] = cotune_cluster
