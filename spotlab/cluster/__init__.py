"""A shared GPU cluster running jobs: one event-driven engine with swappable scheduling and placement stages.

accept (`admission`) -> schedule (`schedulers/`, e.g. ``fifo``, ``sia``) -> place (`placement/`, ``best_fit``)
-> run (`engine`). `simulate.simulate(cluster, jobs, scheduler="fifo")` is a whole run, by name; `engine.Engine`
the same run one decision at a time, on built objects. The cluster and the jobs are described in `state`, the
results in `result`; schedulers and placements are registered by name in `registry`.

Layers, each importing only those below it: `state` < `placement/` < `engine` < `schedulers/` < `registry` <
`simulate`; for traces, `trace_csv` < `alibaba_philly_workload` < `job_table` < `presets`, `trace_jobs`.
This file imports nothing, so importing one module of this package does not import the others.
"""
