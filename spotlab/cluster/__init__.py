"""A shared GPU cluster running jobs: one event-driven engine with swappable scheduling and placement stages.

accept (`admission`) -> schedule (`schedulers/`, e.g. ``fifo``, ``sia``) -> place (`placement/`, ``best_fit``)
-> run (`engine`). `simulate(cluster, jobs, scheduler="fifo")` is a whole run, `Engine` the same run one decision
at a time. The cluster and the jobs are described in `state`, the results in `result`; schedulers and placements
are registered by name in `registry`.

The names below are loaded on first use, so importing one module of this package does not import the others.
"""
