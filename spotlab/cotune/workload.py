"""Old import path, kept for existing code: the trace workload of CoTune's cluster experiments (Alibaba arrivals
and GPU counts, Philly runtimes) is `spotlab.cluster.alibaba_philly_workload`."""

import sys

from ..cluster import alibaba_philly_workload

sys.modules[__name__] = alibaba_philly_workload
