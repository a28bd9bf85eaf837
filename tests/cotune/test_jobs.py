"""`sim_jobs` with a knowledge source: every job spec's completions are assessed in one batch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spotlab.cluster.alibaba_philly_workload import TraceJob
from spotlab.cluster.state import Cluster
from spotlab.cotune.jobs import fine_tune_jobs, sim_jobs
from spotlab.cotune.knowledge import NoisyKnowledge, OracleKnowledge
from spotlab.experiments.cotune_cluster import train_knowledge

CLUSTER = Cluster.parse("A100-80GB:2x8,L40S-48GB:4x4")


@pytest.fixture(scope="module")
def predicted():
    return train_knowledge(600, seed=4)


def trace(n: int, seed: int) -> list[TraceJob]:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.exponential(600.0, n))
    return [TraceJob(i, float(t[i]), int(rng.choice([1, 1, 2, 4, 8])), float(rng.uniform(600, 7200)))
            for i in range(n)]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 30), kind=st.sampled_from(["predicted", "oracle", "noisy"]),
       sigma=st.floats(0.0, 1.0), flip=st.floats(0.0, 1.0), objective=st.sampled_from(
           ["fewest_gpus", "throughput_per_gpu", "throughput"]))
def test_batched_assessment_gives_each_job_what_a_job_alone_gets(predicted, seed, n, kind, sigma, flip, objective):
    source = {"predicted": predicted, "oracle": OracleKnowledge(),
              "noisy": NoisyKnowledge(sigma=sigma, flip=flip, seed=seed)}[kind]
    jobs = fine_tune_jobs(trace(n, seed), CLUSTER, seed=seed)
    together = sim_jobs(jobs, CLUSTER, source, seed=seed, objective=objective)
    alone = [sim_jobs([j], CLUSTER, source, seed=seed, objective=objective)[0] for j in jobs]
    assert together == alone
