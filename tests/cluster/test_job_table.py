"""Job traces as one tidy table, cluster presets, pool assignment, GPU mix, load and time-split windows."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import tarfile
import threading
from functools import cache, partial

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spotlab.cluster.job_table import (
    COLUMNS,
    DTYPES,
    STATUSES,
    TRACES,
    job_table,
    job_windows,
    offered_load,
    read_job_table,
    with_load,
    with_multi_gpu_share,
)
from spotlab.cluster.presets import (
    PRESETS,
    _fits,
    assign_pools,
    cluster_jobs,
    nodes_cluster,
    preset,
    unplaceable_jobs,
)
from spotlab.data import locate as data
from spotlab.data.catalogue import Entry, Repo, Source
from spotlab.errors import DataNotFoundError, JobTableError, TraceError

REAL = ("microsoft-itp-2021", "philly-pollux", "helios-gpw", "philly-gpw", "alibaba-gpu-v2023")
# Jobs in the table (GPU jobs; see each folder's README): 82,247 Philly jobs for Pollux, 10,796 of Helios' 15,000
# with GPUs, all 15,000 of Philly's; ITP clusters 01-07; Alibaba: 7,049 GPU pods from the first ended one, 861 of
# them never scheduled.
REAL_JOBS = {"microsoft-itp-2021": 44_910, "philly-pollux": 82_247, "helios-gpw": 10_796, "philly-gpw": 15_000,
             "alibaba-gpu-v2023": 6_188}


@cache
def _real(name: str) -> pd.DataFrame:
    return job_table(name, download=False)


def real(name: str) -> pd.DataFrame:
    try:
        return _real(name).copy()
    except DataNotFoundError as exc:
        pytest.skip(f"trace not available: {str(exc).splitlines()[0]}")


def _check_tidy(table: pd.DataFrame) -> None:
    assert tuple(table.columns) == COLUMNS
    assert dict(table.dtypes) == dict(DTYPES)
    t = table["submit_time_s"].to_numpy()
    assert t[0] == 0 and np.all(np.diff(t) >= 0)
    assert (table["num_gpus"] >= 1).all() and (table["duration_s"] >= 0).all()
    assert table["status"].notna().all() and table["user"].notna().all() and table["job_id"].notna().all()
    assert isinstance(table.index, pd.RangeIndex)


# ------------------------------------------------------------------------------------------- real traces


@pytest.mark.parametrize("name", REAL)
def test_real_trace_loads_tidy(name):
    table = real(name)
    _check_tidy(table)
    assert len(table) == REAL_JOBS[name]
    assert table["pool"].isna().all()
    assert table.attrs["trace"] == name and table.attrs["seed"] == 0
    lacks = {"microsoft-itp-2021": {"user", "status", "gpu_type"}, "philly-pollux": {"user", "status", "gpu_type"},
             "helios-gpw": {"gpu_type"}, "philly-gpw": {"gpu_type"},
             "alibaba-gpu-v2023": {"user", "gpu_type", "num_gpus"}}[name]
    assert set(table.attrs["substitutes"]) == lacks


def test_real_trace_facts():
    itp = real("microsoft-itp-2021")
    assert itp["source"].nunique() == 7 and itp["duration_s"].min() >= 600  # README: shortest job 600 s
    pollux = real("philly-pollux")
    assert pollux["num_gpus"].max() == 128 and (pollux["num_gpus"] == 1).mean() == pytest.approx(0.93, abs=0.005)
    assert pollux["source"].nunique() == 15  # virtual clusters
    helios = real("helios-gpw")
    assert helios.attrs["dropped"] == {"no GPU (GPU count 0)": 4_204}
    assert set(helios["status"].unique()) == {"completed", "failed", "killed"}
    philly = real("philly-gpw")
    assert philly["submit_time_s"].iloc[-1] / 86_400 == pytest.approx(57.6, abs=0.05)  # README: 57.6 days
    alibaba = real("alibaba-gpu-v2023")
    assert alibaba.attrs["dropped"]["never scheduled (no scheduled_time, e.g. Pending)"] == 861


def test_completed_only_on_real_status():
    real("philly-gpw")
    table = job_table("philly-gpw", completed_only=True, download=False)
    assert len(table) == 8_538 and (table["status"] == "completed").all()  # README: Pass 57% of 15,000
    assert table.attrs["dropped"]["not completed (completed_only)"] == 6_462
    real("philly-pollux")
    with pytest.raises(JobTableError, match="records no job status"):
        job_table("philly-pollux", completed_only=True, download=False)


# ------------------------------------------------------------------------------- formats, synthetic files

ITP = "job_id,submission_time,duration,num_gpu\nb,700,1200,8\na,100,600,1\nc,700,3600,2\n"
POLLUX = ("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,vc1\n"
          "2017-10-09 06:13:03,2951.0,4,11804.0,vc2\n2017-10-09 06:13:03,10,0,0,vc2\n")
GPW = ("u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\n0,7,1,1,1,0,84,0,Pass\n"
       "1,7,0,4,1,10,50,0,Pass\n2,9,16,2,2,30,600,0,Killed\n3,9,8,2,1,5,70,0,Failed\n")
OPENB = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
         "scheduled_time\n"
         "p0,1,1,1,1000,,LS,Running,0,900,0\n"          # alive at the cut, before any ended pod: sparse prefix
         "p1,1,1,1,500,,LS,Succeeded,100,400,150\n"     # shares a GPU
         "p2,1,1,8,1000,V100M32,LS,Failed,200,260,210\n"
         "p3,1,1,2,1000,,BE,Pending,300,350,\n"         # never scheduled
         "p4,1,1,0,0,,BE,Succeeded,310,320,310\n"       # no GPU
         "p5,1,1,1,1000,,LS,Running,400,900,420\n")


def _write(tmp_path, name: str, text: str, gz: bool = False):
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return path


def test_itp_format(tmp_path):
    table = read_job_table(_write(tmp_path, "cluster99.csv.gz", ITP, gz=True))
    _check_tidy(table)
    assert table["job_id"].tolist() == ["a", "b", "c"]  # sorted by submit time, ties in file order
    assert table["submit_time_s"].tolist() == [0.0, 600.0, 600.0]
    assert table["num_gpus"].tolist() == [1, 8, 2] and (table["status"] == "unknown").all()
    assert table["gpu_type"].isna().all() and table["user"].str.startswith("synthetic-").all()
    assert table.attrs["formats"] == ["itp"] and table.attrs["files"][0].endswith(".gz")


def test_itp_files_share_one_clock(tmp_path):
    a = _write(tmp_path, "cluster01.csv", "job_id,submission_time,duration,num_gpu\nx,500,60,1\n")
    b = _write(tmp_path, "cluster02.csv", "job_id,submission_time,duration,num_gpu\ny,200,60,1\n")
    table = read_job_table([a, b])
    assert table["job_id"].tolist() == ["y", "x"] and table["submit_time_s"].tolist() == [0.0, 300.0]
    assert table["source"].tolist() == ["cluster02", "cluster01"]


def test_pollux_format(tmp_path):
    folder = tmp_path / "philly-pollux"
    folder.mkdir()
    table = read_job_table(_write(folder, "philly.csv", POLLUX))
    _check_tidy(table)
    assert table["submit_time_s"].tolist() == [0.0, 48 * 60 + 52]
    assert table["source"].tolist() == ["philly-pollux/vc-vc2", "philly-pollux/vc-vc1"]
    assert table["job_id"].tolist() == ["philly:3", "philly:2"]  # file line numbers
    assert table.attrs["dropped"] == {"no GPU (GPU count 0)": 1}
    assert "2017-10-09 06:13:03" in table.attrs["origin"]


def test_gpw_format_and_completed_only(tmp_path):
    path = _write(tmp_path, "trace.csv", GPW)
    table = read_job_table(path)
    _check_tidy(table)
    assert table["submit_time_s"].tolist() == [0.0, 40.0, 45.0]  # cumulative intervals, CPU-only job left out
    assert table["status"].tolist() == ["completed", "killed", "failed"]
    assert table["user"].tolist() == ["7", "9", "9"] and "user" not in table.attrs["substitutes"]
    done = read_job_table(path, completed_only=True)
    assert done["job_id"].tolist() == ["0"]
    assert done.attrs["dropped"] == {"no GPU (GPU count 0)": 1, "not completed (completed_only)": 2}


def test_openb_format(tmp_path):
    table = read_job_table(_write(tmp_path, "pods.csv", OPENB))
    _check_tidy(table)
    assert table["job_id"].tolist() == ["p1", "p2", "p5"]
    assert table["submit_time_s"].tolist() == [0.0, 100.0, 300.0]
    assert table["duration_s"].tolist() == [250.0, 50.0, 480.0]  # scheduling to deletion
    assert table["status"].tolist() == ["completed", "failed", "running"]
    assert table["gpu_type"].tolist()[1] == "V100M32" and pd.isna(table["gpu_type"].iloc[0])
    assert set(table.attrs["dropped"].values()) == {1} and len(table.attrs["dropped"]) == 3
    assert "1 pod(s) use a share" in table.attrs["substitutes"]["num_gpus"]
    assert "gpu_type" not in table.attrs["substitutes"]  # the trace names GPU types


def test_name_lookup_and_unknown_name(tmp_path):
    assert set(REAL) <= set(TRACES)
    path = _write(tmp_path, "x.csv", ITP)
    assert job_table(str(path)).attrs["trace"] == "x"
    with pytest.raises(JobTableError, match="unknown job trace 'nope'"):
        job_table("nope")


# ----------------------------------------------------------------------------------------- bad files


@pytest.mark.parametrize("text, problem", [
    ("", "empty file"),
    ("job_id,submission_time,duration,num_gpu\n", "no jobs (header only)"),
    ("a,b,c\n1,2,3\n", "match no known job-trace format"),
    ("job_id,submission_time,num_gpu\na,1,1\n", "looks like a itp job trace but lacks column(s) duration"),
    ("job_id,submission_time,duration,num_gpu\na,1,5,1\nb,2,-3,1\n", "column 'duration': negative duration in 1 "
                                                                      "row(s) (line 3: '-3')"),
    ("job_id,submission_time,duration,num_gpu\na,x,5,1\n", "column 'submission_time': not a finite number"),
    ("job_id,submission_time,duration,num_gpu\na,1,5,1.5\n", "not a whole number"),
    ("timestamp,duration,num_gpus\n2017-13-45 99:00:00,5,1\n", "column 'timestamp': not a date-time"),
    (GPW.replace("Killed", "Lost"), "column 'new_status': unknown value"),
    (OPENB.replace("p2,1,1,8,1000,V100M32,LS,Failed,200,260,210", "p2,1,1,8,1000,,LS,Failed,200,100,210"),
     "deletion before scheduled_time"),
    ("job_id,submission_time,duration,num_gpu\na,1,5,0\n", "no GPU job left"),
    ("job_id,submission_time,duration,num_gpu\na,1,5,1\na,2,5,1\n", "job id 'a' is in 2 rows"),
])
def test_bad_file_one_line_error(tmp_path, text, problem):
    path = _write(tmp_path, "bad.csv", text)
    with pytest.raises(TraceError) as info:
        read_job_table(path)
    msg = str(info.value)
    assert problem in msg and str(path) in msg and "\n" not in msg


def test_unreadable_files(tmp_path):
    bad_gz = tmp_path / "bad.csv.gz"
    bad_gz.write_bytes(b"\x1f\x8b" + b"junk" * 10)
    for path, problem in ((tmp_path / "missing.csv", "no such file"), (tmp_path, "is a folder; expected a job trace file"),
                          (bad_gz, "damaged gzip file")):
        with pytest.raises(TraceError, match=problem) as info:
            read_job_table(path)
        assert "\n" not in str(info.value)


# --------------------------------------------------------------------------------------------- substitutes


def test_seeded_user_substitute_is_reproducible_and_recorded(tmp_path):
    path = _write(tmp_path, "c.csv", "job_id,submission_time,duration,num_gpu\n" +
                  "".join(f"j{i},{i},60,1\n" for i in range(400)))
    a, b, c = read_job_table(path, seed=3), read_job_table(path, seed=3), read_job_table(path, seed=4)
    assert a["user"].tolist() == b["user"].tolist() != c["user"].tolist()
    assert a.attrs["seed"] == 3 and "default_rng(seed)" in a.attrs["substitutes"]["user"]
    assert a["user"].value_counts().index[0] == "synthetic-0"  # Zipf: user 0 submits most
    none = read_job_table(path, users=None)
    assert none["user"].isna().all() and "<NA>" in none.attrs["substitutes"]["user"]
    assert "unknown" in a.attrs["substitutes"]["status"] and "assign_pools" in a.attrs["substitutes"]["gpu_type"]
    with pytest.raises(JobTableError, match="seed"):
        read_job_table(path, seed=-1)


# ------------------------------------------------------------------------------- GPU mix, load, windows


def _table(times, gpus=1, durations=60.0) -> pd.DataFrame:
    """A job table built in memory (what the loaders return, without a file)."""
    n = len(times)
    return pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "submit_time_s": np.asarray(times, float),
                         "num_gpus": gpus, "duration_s": durations, "gpu_type": None, "pool": None, "user": "u",
                         "status": "unknown", "source": "t"}).astype(dict(DTYPES))


def _synthetic_table(n: int = 1000, seed: int = 0, multi: float = 0.2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gpus = np.where(rng.random(n) < multi, rng.choice([2, 4, 8, 16], size=n), 1)
    times = np.cumsum(rng.exponential(60, n))
    return _table(times - times[0], gpus, rng.lognormal(7, 1.5, n))


@pytest.mark.parametrize("share", [0.0, 0.05, 0.5, 0.9])
def test_multi_gpu_share_hits_target_and_is_seeded(share):
    table = _synthetic_table()
    out = with_multi_gpu_share(table, share, seed=1)
    assert (out["num_gpus"] > 1).mean() == pytest.approx(round(share * len(table)) / len(table))
    assert out["num_gpus"].tolist() == with_multi_gpu_share(table, share, seed=1)["num_gpus"].tolist()
    rec = out.attrs["multi_gpu_share"]
    assert rec["target"] == share and rec["seed"] == 1 and rec["before"] == (table["num_gpus"] > 1).mean()
    assert set(out["num_gpus"][out["num_gpus"] > 1]) <= {2, 4, 8, 16}  # counts from the table's own mix
    assert out["duration_s"].equals(table["duration_s"]) and out["submit_time_s"].equals(table["submit_time_s"])


def test_multi_gpu_share_errors():
    single = with_multi_gpu_share(_synthetic_table(200), 0.0)
    with pytest.raises(JobTableError, match="no multi-GPU job"):
        with_multi_gpu_share(single, 0.3)
    assert (with_multi_gpu_share(single, 0.3, counts={8: 1.0})["num_gpus"] > 1).sum() == 60
    with pytest.raises(JobTableError, match=r"in \[0, 1\]"):
        with_multi_gpu_share(single, 1.5)
    with pytest.raises(JobTableError, match="before assign_pools"):
        with_multi_gpu_share(assign_pools(single, preset("philly")), 0.3)


@pytest.mark.parametrize("load", [0.3, 0.8, 1.5])
def test_load_reaches_target(load):
    cluster = preset("helios")
    table = assign_pools(_synthetic_table(), cluster)
    out = with_load(table, load, cluster)
    assert offered_load(out, cluster) == pytest.approx(load, rel=0.02)
    assert out.attrs["load"]["target"] == load and out.attrs["load"]["capacity_gpus"] == 136
    assert out["duration_s"].equals(table["duration_s"]) and out["job_id"].equals(table["job_id"])
    with pytest.raises(JobTableError, match="load must be"):
        with_load(table, 0, cluster)


def test_load_on_a_real_trace_and_its_windows():
    cluster = preset("philly")
    jobs = cluster_jobs(real("philly-gpw"), cluster, seed=0, multi_gpu_share=0.3, load=0.9)
    assert offered_load(jobs, cluster) == pytest.approx(0.9, rel=0.02)
    assert {"multi_gpu_share", "pools", "load"} <= set(jobs.attrs)
    windows = job_windows(jobs)
    assert [len(windows[s]) for s in ("train", "validation", "test")] == [35, 11, 12]  # remainders roll on


@settings(max_examples=60, deadline=None, derandomize=True)
@given(n=st.integers(10, 400), size=st.integers(1, 20), ties=st.integers(1, 5),
       fractions=st.sampled_from([(0.6, 0.2, 0.2), (0.5, 0.5), (0.2, 0.3, 0.5), (0.8, 0.1, 0.1)]))
def test_windows_never_overlap_in_time(n, size, ties, fractions):
    times = np.sort(np.random.default_rng(n).integers(0, max(n // ties, 1), n)).astype(float)
    table = _table(times - times[0])
    names = [f"s{k}" for k in range(len(fractions))]
    try:
        windows = job_windows(table, size=size, split=names, fractions=fractions)
    except JobTableError as exc:
        assert "fewer than one window" in str(exc)
        return
    assert list(windows) == names
    seen: set[str] = set()
    last = -np.inf
    for name in names:
        first = windows[name][0]["submit_time_s"].iloc[0]
        assert first > last  # a split starts strictly after the previous one's last submission
        for w, frame in enumerate(windows[name]):
            assert len(frame) == size and frame.attrs["window"]["split"] == name
            assert frame.attrs["window"]["index"] == w
            ids = set(frame["job_id"])
            assert not ids & seen
            seen |= ids
        last = windows[name][-1]["submit_time_s"].iloc[-1]


def test_windows_bad_arguments():
    table = _synthetic_table(300)
    with pytest.raises(JobTableError, match="fewer than one window"):
        job_windows(table, size=256)
    with pytest.raises(JobTableError, match="sum to 1"):
        job_windows(table, size=10, fractions=(0.5, 0.2, 0.2))
    with pytest.raises(JobTableError, match="same length"):
        job_windows(table, size=10, split=("a", "b"), fractions=(0.6, 0.2, 0.2))


# ------------------------------------------------------------------------------------------------ presets


def test_presets_are_valid_clusters():
    expected = {"philly": (192, 2), "helios": (136, 5), "alibaba": (254, 5)}
    for name, (gpus, pools) in expected.items():
        cluster = preset(name)
        assert sum(p.nodes * p.gpus_per_node for p in cluster.pools) == gpus == PRESETS[name].gpus
        assert len(cluster.pools) == pools and PRESETS[name].source
    with pytest.raises(JobTableError, match="unknown cluster preset"):
        preset("nope")


def test_alibaba_2023_nodes_preset():
    try:
        cluster = preset("alibaba-2023-nodes", download=False)
    except DataNotFoundError:
        pytest.skip("Alibaba 2023 node list not available")
    assert sum(p.nodes for p in cluster.pools) == 1_213 and len(cluster.pools) == 12  # README: 1,213 nodes
    assert sum(p.nodes * p.gpus_per_node for p in cluster.pools) == 6_212  # README: 6,212 GPUs


def test_nodes_cluster_from_a_file(tmp_path):
    path = _write(tmp_path, "nodes.csv", "sn,gpu,model\nn0,8,V100\nn1,8,V100\nn2,2,T4\nn3,0,\n")
    cluster = nodes_cluster(path)
    assert [(p.gpu, p.nodes, p.gpus_per_node) for p in cluster.pools] == [("T4", 1, 2), ("V100", 2, 8)]
    with pytest.raises(TraceError, match="missing column"):
        nodes_cluster(_write(tmp_path, "x.csv", "sn,gpus\nn0,8\n"))


def _check_assignment(table: pd.DataFrame, cluster) -> None:
    out = assign_pools(table, cluster, seed=5)
    bad = unplaceable_jobs(table, cluster)
    pools = out["pool"]
    assert pools.isna().sum() == len(bad) == out.attrs["pools"]["unplaceable"]
    assert set(out.loc[pools.isna(), "job_id"]) == set(bad["job_id"]) and (bad["reason"].str.len() > 0).all()
    assert sum(out.attrs["pools"]["unplaceable_by_reason"].values()) == len(bad)
    placed = out[pools.notna()]
    for gpus, pool in set(zip(placed["num_gpus"], placed["pool"])):
        assert 0 <= pool < len(cluster.pools) and not cluster.pools[pool].never_fits(int(gpus))  # engine's rule
    assert out["pool"].equals(assign_pools(table, cluster, seed=5)["pool"])  # seeded


@pytest.mark.parametrize("name", [p for p in PRESETS if p != "alibaba-2023-nodes"])
def test_any_preset_runs_a_synthetic_trace(name):
    table = with_multi_gpu_share(_synthetic_table(500), 0.4, counts={2: 1, 8: 1, 64: 1, 512: 1})
    _check_assignment(table, preset(name))
    assert assign_pools(table, preset(name)).attrs["pools"]["unplaceable"] > 0  # 512 GPUs fit nowhere


@pytest.mark.parametrize("trace", REAL)
@pytest.mark.parametrize("name", list(PRESETS))
def test_any_preset_runs_any_real_trace(trace, name):
    table = real(trace)
    try:
        cluster = preset(name, download=False)
    except DataNotFoundError:
        pytest.skip("Alibaba 2023 node list not available")
    _check_assignment(table, cluster)


def test_whole_nodes_or_spread():
    table = _table([0.0, 1.0, 2.0], gpus=[27, 40, 200])
    whole, spread = assign_pools(table, preset("philly")), assign_pools(table, preset("philly"), whole_nodes=False)
    assert whole["pool"].isna().tolist() == [True, False, True]  # 27: no multiple of 2 or 8; 200 > 32 and 160
    assert spread["pool"].isna().tolist() == [False, False, True]
    reasons = unplaceable_jobs(table, preset("philly"))["reason"].tolist()
    assert "not a multiple" in reasons[0] and "needs 25 P100 nodes of 8, the pool has 20" in reasons[1]
    assert all(_fits(p, g) == (not p.never_fits(g)) for p in preset("alibaba").pools for g in range(1, 100))


def test_gpu_type_binds_to_its_pools():
    table = _synthetic_table(300)
    table["gpu_type"] = pd.array(["V100M32"] * 100 + ["T4|P100"] * 100 + ["H100"] * 100, dtype="string")
    out = assign_pools(table, preset("alibaba"))
    names = [p.gpu for p in preset("alibaba").pools]
    got = [names[p] if pd.notna(p) else None for p in out["pool"]]
    assert set(got[:100]) <= {"V100M32", None} and set(got[100:200]) <= {"T4", "P100", None}
    assert out.attrs["pools"]["gpu_type_matched"] == 200  # H100 is no pool's type: any pool


# ------------------------------------------------------------------------------------ catalogue download


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def serve(tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def _empty_data(tmp_path, monkeypatch) -> None:
    """An empty data folder and a fresh cache, so a named trace has to come through a download."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv(data.ENV_DATA, str(tmp_path / "empty"))
    monkeypatch.setenv(data.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def _served(root, source: Source):
    path = root / source.repo.owner / source.repo.name / source.repo.commit / source.path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def test_named_trace_downloads_through_the_catalogue(serve, tmp_path, monkeypatch):
    from spotlab.data.catalogue import REGISTRY

    expected = real("philly-gpw")
    local = expected.attrs["files"][0]
    _empty_data(tmp_path, monkeypatch)
    rel = TRACES["philly-gpw"][0]
    entry = REGISTRY[rel]
    assert entry.kind == "gzip" and entry.source.repo.commit.startswith("c1b61aa")
    root, url = serve
    _served(root, entry.source).write_bytes(GPW.encode())
    with pytest.raises(DataNotFoundError, match="sha256"):  # a source that is not the pinned one is refused
        data.dataset_path(rel, base_url=url)
    _served(root, entry.source).write_bytes(gzip.decompress(open(local, "rb").read()))
    monkeypatch.setenv(data.ENV_URL, url)
    table = job_table("philly-gpw")  # the pinned source, fetched, checked and kept gzip'd in the cache
    assert table.attrs["files"][0].startswith(str(data.cache_dir()))
    pd.testing.assert_frame_equal(table, expected)


def test_archive_member_kept_gzipped(serve, tmp_path, monkeypatch):
    _empty_data(tmp_path, monkeypatch)
    root, url = serve
    csv = ITP.encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("raw-traces/cluster01.csv")
        info.size = len(csv)
        tar.addfile(info, io.BytesIO(csv))
    archive = Source(Repo("o", "r", "0" * 40), "data/raw-traces.tar.gz", hashlib.sha256(buf.getvalue()).hexdigest())
    _served(root, archive).write_bytes(buf.getvalue())
    rel = "traces/test/cluster01.csv.gz"
    entry = Entry(rel, "member", hashlib.sha256(csv).hexdigest(), source=archive, member="cluster01.csv")
    monkeypatch.setattr(data, "REGISTRY", {rel: entry})
    path = data.dataset_path(rel, base_url=url)
    assert gzip.decompress(path.read_bytes()) == csv
    assert read_job_table(path)["job_id"].tolist() == ["a", "b", "c"]
    assert data.dataset_path(rel, download=False) == path  # the cached gzip copy is recognised


def test_statuses_are_fixed():
    assert list(DTYPES["status"].categories) == list(STATUSES)
