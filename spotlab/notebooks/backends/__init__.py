"""Where work runs, shared by `spotlab sweep` and `spotlab reproduce`: tasks in this process, in local threads or
processes (`local.py`), or on a Dask distributed cluster (`dask_cluster.py`); a lease per task so that a task
runs once at a time even when a cluster reschedules it or two runs overlap (`leases.py`)."""
