"""Engine jobs from a job table: one `SimJob` per trace job that has a pool, with one option.

A trace says how long a job ran on how many GPUs, nothing of alternatives, so each job gets a single option: its
GPU count on its pool's GPU type, running at rate 1 for ``work = duration_s`` (belief = truth: schedulers that use
runtimes see the true ones, an oracle). The engine may place the option in any pool of that GPU type where it
fits (in ``philly`` both pools are P100: the 2-GPU and the 8-GPU nodes). Jobs without a pool (no pool can hold
them) are left out, as `presets.assign_pools` reports. ``job_id`` is the row's position in the table and the
option's ``label`` the trace's job id; arrival times are the table's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import JobTableError
from .job_table import check_table
from .state import Cluster, Option, SimJob

__all__ = ["trace_jobs"]


def trace_jobs(table: pd.DataFrame, cluster: Cluster) -> tuple[SimJob, ...]:
    """The table's jobs with a pool as engine jobs (module doc); raises `JobTableError` if pools were never set."""
    table = check_table(table)
    if not isinstance(cluster, Cluster):
        raise JobTableError(f"expected a Cluster (e.g. preset('philly')), got {cluster!r}")
    if "pools" not in table.attrs and table["pool"].isna().all():
        raise JobTableError("the table has no pools: run presets.cluster_jobs or assign_pools with this cluster first")
    pools = cluster.pools
    pool = table["pool"].to_numpy(dtype="float64", na_value=np.nan)
    bad = ~np.isnan(pool) & ((pool < 0) | (pool >= len(pools)))
    if bad.any():
        raise JobTableError(f"pool {int(pool[bad][0])} is not a pool of {cluster} ({len(pools)} pools): the table's "
                            "pools were assigned for another cluster")
    duration = table["duration_s"].to_numpy(dtype=float)
    short = ~np.isnan(pool) & ~(duration > 0)
    if short.any():
        raise JobTableError(f"job {table['job_id'].iloc[int(np.flatnonzero(short)[0])]} has duration "
                            f"{duration[short][0]!r} s; a job must run for more than 0 s")
    gpus = table["num_gpus"].to_numpy()
    arrival = table["submit_time_s"].to_numpy(dtype=float)
    labels = table["job_id"].astype(str).to_numpy()
    jobs = []
    for i in np.flatnonzero(~np.isnan(pool)):
        p = pools[int(pool[i])]
        option = Option(p.gpu, int(gpus[i]), 1.0, 1.0, False, str(labels[i]))
        jobs.append(SimJob(int(i), float(arrival[i]), float(duration[i]), (option,)))
    return tuple(jobs)
