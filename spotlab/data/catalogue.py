"""Where every known data file comes from, pinned by commit and sha256.

The kinds of entries, so that a download is either byte-exact or refused with a reason:

- ``verbatim``: a copy of one file of a public repository; fetched as is and checked against ``sha256``.
- ``rebuild``: a tidy CSV under ``markets/`` re-derived from pinned source files (each checked on download);
  ``sha256`` is that of the *decompressed* CSV and is checked after the rebuild (values of markets/SHA256SUMS).
- ``member``: one member of a pinned tar archive (``source`` is the archive, ``member`` its path inside it);
  the archive is fetched and checked against its sha256, then the member against ``sha256``. A ``relpath``
  ending in ``.gz`` for a member that does not keeps it gzip-compressed (``sha256`` is still the member's).
- ``windows``: a table of window slices derived from the window files inside a pinned archive
  (``windows`` says which); ``sha256`` is that of the table and is checked after the rebuild.
- ``local``: cannot be fetched from here; ``reason`` says why. ``sha256`` is still given where known so a
  local copy can be checked by hand.
- ``gzip``: a verbatim file of a public repository kept gzip-compressed under ``relpath`` (``.gz``); ``sha256``
  is that of the source's bytes, i.e. of the decompressed file, checked on download and after compressing.

Hashes of verbatim files were computed from the copies in the shared data folder, whose READMEs name the
repository, commit and path of each one (``__`` in a file name stands for ``/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Mapping

GITHUB_RAW = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class Repo:
    """A public repository at a pinned commit: a moving branch would make hashes meaningless."""

    owner: str
    name: str
    commit: str


@dataclass(frozen=True)
class Source:
    """One file of a pinned repository, with the sha256 its bytes must have."""

    repo: Repo
    path: str
    sha256: str

    def url(self, base: str = GITHUB_RAW) -> str:
        """URL in the raw.githubusercontent.com layout ``{base}/{owner}/{repo}/{commit}/{path}``."""
        return f"{base.rstrip('/')}/{self.repo.owner}/{self.repo.name}/{self.repo.commit}/{self.path}"


@dataclass(frozen=True)
class CountsRecipe:
    """How a tidy counts CSV is derived: value i of each trace's ``data`` at ``start + i * gap_seconds``.

    Rows come zone by zone in the order of ``zones`` (the order of the source files), then by time.
    Prices are constant strings (possibly empty) because these sources carry no per-tick price.
    """

    cloud: str
    gpu: str
    requested: int
    start: str  # conventional start, ISO 8601 UTC: the sources record only a relative clock
    spot_price: str
    on_demand_price: str
    zones: tuple[tuple[str, Source], ...]


@dataclass(frozen=True)
class WindowsRecipe:
    """A windows CSV derived from the window files of an archive: one row per (env, window), in the order
    of ``envs`` then ``windows``, with the file's ``metadata.start_time`` / ``end_time`` as ``start_tick`` /
    ``end_tick`` (the slice ``[start, end)`` of the env's trace). ``columns`` is the CSV header; ``member``
    the path of a window file inside ``archive``, with ``{env}`` and ``{window}`` to fill in."""

    archive: Source
    member: str
    envs: tuple[str, ...]
    windows: tuple[int, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    """A known relative path under the data root and how (or whether) it can be obtained."""

    relpath: str
    kind: Literal["verbatim", "rebuild", "local", "gzip", "member", "windows"]
    sha256: str | None
    source: Source | None = None
    recipe: CountsRecipe | None = None
    reason: str = ""
    member: str = ""  # kind "member": path inside the archive `source`
    windows: WindowsRecipe | None = None  # kind "windows"


SKYPILOT = Repo("skypilot-org", "spot-traces", "221da1ab9bdfe7966da296265d7694d52dc0c5a6")
SPOTHEDGE = Repo("MaoZiming", "spothedge_ae", "df02263c3c24e598bed93486b79feafdac49bf20")
SKYNOMAD = Repo("andylizf", "skynomad-artifact", "62b9aaa1942e30c40cb9f6f5d7d03d6823d1d1f7")
ADRS = Repo("UCB-ADRS", "ADRS-Leaderboard", "f856497ded0c34c97323730f2012a2767b1caa92")
# GPU-cloud marketplace snapshots (spotlab.market.marketplace). MIT License, Copyright (c) 2025 Piotr Mazurek: the
# licence text travels with the data (markets/gpu-price-tracker/LICENSE; upstream LICENSE at this commit).
GPU_PRICE_TRACKER = Repo("tugot17", "gpu-price-tracker", "718a831c495f202f8c290d290b1f652aa7ed70d9")

# Job-level GPU cluster traces (spotlab.cluster.job_table); each folder's README in the shared data names the source.
ALIBABA_GPU_2023 = Repo("alibaba", "clusterdata", "50a91c7c74abe3b658188dc78ac1dd302970d40c")
POLLUX_ARTIFACT = Repo("petuum", "adaptdl", "c793c7089bd307462686339d29707925c461f9a9")  # branch osdi21-artifact
GEN_PARALLEL_WORKLOADS = Repo("DIR-LAB", "Gen-Parallel-Workloads", "c1b61aa993df914b57e7be002e649c3718386e65")
ELASTICFLOW_TRACES = Repo("microsoft", "elasticflow-traces", "277ed24d0e908c31a1c98145819e2e3853d8ac00")
# Microsoft ITP 2021 (MIT License, Copyright (c) Microsoft Corporation): one archive of cluster01..10.csv and a
# LICENSE; the sha256 is from the README of traces/microsoft-itp-2021 (no local copy of the archive to hash).
ITP_ARCHIVE = Source(ELASTICFLOW_TRACES, "data/raw-traces.tar.gz",
                     "67398e1a89245c50ae0881bf997e6cda0c95f9f47980af5bc56d67998965669f")

CSV_HEADER = "time,cloud,zone,gpu,requested,available,spot_price,on_demand_price"


def _verbatim(folder: str, name: str, repo: Repo, repo_path: str, sha256: str) -> Entry:
    return Entry(f"sky_spot_traces/{folder}/{name}", "verbatim", sha256, source=Source(repo, repo_path, sha256))


def _skypilot(name: str, sha256: str) -> Entry:
    return _verbatim("skypilot-spot-traces", name, SKYPILOT, name.replace("__", "/"), sha256)


def _spothedge(name: str, sha256: str) -> Entry:
    return _verbatim("spothedge-ae", name, SPOTHEDGE, "data/" + name.replace("__", "/"), sha256)


_ADRS_TAR = "problems/cant_be_late/resources/real_traces.tar.gz"
# The Can't Be Late traces of the ADRS leaderboard (3,631,800 bytes; sha256 from its README in the shared data).
ADRS_TRACES = Source(ADRS, _ADRS_TAR, "26813d4c6dbe0b60e3d0ff7dc264427a665736c6199aa48a8f0c8aba0437d503")
ADRS_ENVS = ("us-west-2a_k80_8", "us-west-2a_v100_1", "us-west-2a_v100_8", "us-west-2b_k80_1", "us-west-2b_k80_8",
             "us-west-2b_v100_1")
# The 30 random-start windows the leaderboard evaluates (the same indices for every env and overhead).
ADRS_LEADERBOARD_WINDOWS = (0, 8, 9, 20, 21, 33, 42, 51, 61, 70, 99, 107, 117, 126, 135, 145, 154, 163, 172, 182,
                            191, 219, 228, 238, 247, 256, 266, 275, 284, 294)
_ADRS_WINDOW_FILE = "real/ddl=search+task=48+overhead=0.10/real/{env}/traces/random_start/{window}.json"
_ADRS_REASON = (
    f"a file of the tar archive {ADRS.owner}/{ADRS.name}@{ADRS.commit[:12]}:{_ADRS_TAR} whose path inside the "
    "archive is not recorded here"
)


def _adrs_member(name: str, member: str, sha256: str) -> Entry:
    return Entry(f"sky_spot_traces/adrs-cant-be-late-traces/{name}", "member", sha256, source=ADRS_TRACES,
                 member=member)


_ADRS_PING_SHA256 = (
    "e2d7ec3e2a561e22d749288b71b5a1030f6d75bfdbb73d5d908e104916c9b942",
    "3fd0ac7d16fba6ba666e12f6db7df31209b39f8b0a7c4f3b7bd875dda6b4d0b1",
    "7c1931b556378c271acbb979231154ec3c80760385507af0acd1f50e7b0eeb9a",
    "d226ca1a3adf30cef82377a5cc9332af8559e3d9447e2c4d94b74fbaaa283905",
    "7e74ec9b843dbc2ce994f0a18485508d32b70a342cd41c8a352c15b999e8ec17",
    "937667b6783dd8b25c73c0e6b5548255a98a40f7bc06c581f17d267242cb6e5d",
)
_SKYNOMAD_TAR = "data/converted_multi_region_aligned_h100_16_merged.tar.gz"
_SKYNOMAD_REASON = (
    f"member of the tar archive {SKYNOMAD.owner}/{SKYNOMAD.name}@{SKYNOMAD.commit[:12]}:{_SKYNOMAD_TAR}, whose "
    "sha256 is not pinned here (no local copy of the archive to hash), so a download could not be verified"
)


def _gpu_price_tracker(gpu: str, sha256: str) -> Entry:
    """``markets/gpu-price-tracker/<gpu>.jsonl.gz`` = ``data/summary/<gpu>.jsonl`` at the pinned commit, gzip'd."""
    return Entry(f"markets/gpu-price-tracker/{gpu}.jsonl.gz", "gzip", sha256,
                 source=Source(GPU_PRICE_TRACKER, f"data/summary/{gpu}.jsonl", sha256))


def _gzip_trace(relpath: str, repo: Repo, path: str, sha256: str) -> Entry:
    """A job trace kept gzip'd under ``traces/`` (sha256 of the source's bytes, i.e. of the decompressed file)."""
    return Entry(f"traces/{relpath}", "gzip", sha256, source=Source(repo, path, sha256))


def _itp_cluster(number: int, sha256: str) -> Entry:
    """``clusterNN.csv`` of the ITP archive, kept gzip'd; ``sha256`` is that of the CSV in the archive."""
    name = f"cluster{number:02d}.csv"
    return Entry(f"traces/microsoft-itp-2021/{name}.gz", "member", sha256, source=ITP_ARCHIVE, member=name)


def _local(relpath: str, sha256: str | None, reason: str) -> Entry:
    return Entry(relpath, "local", sha256, reason=reason)


_GCP1_ZONES = ("asia-northeast1-a", "europe-west4-a", "us-central1-a", "us-central1-b", "us-east1-b", "us-west1-b")
_GCP1_SHA256 = (
    "e8a7da01b77f5d0e5da642031000973b0aa7824774e23567565b8584a36d0d2b",
    "a4ff8c5182fa2be8e29c03fc891a8db60a7ec89f60c20535100608ee3661885a",
    "3c4244f8b9bf999a763881d501b3a96bdd3eb2530e2006726e56b0d6b01f84d0",
    "2b64a9f89ba584ee50ff056066355640018560ff5f67fa567acea8b84abfc2e8",
    "bbc7d3d3078652640fa3b4f089fea4423b3c4418689ae8f50d658e66763f8e37",
    "4fff137e9385fa759dbdcec2df00b2e1f72d55e4c611e13cf8e761088a0ac755",
)
_GCP1 = tuple(
    _spothedge(f"GCP1__{zone}_a100_40gb_8.json", sha) for zone, sha in zip(_GCP1_ZONES, _GCP1_SHA256, strict=True)
)

# The 16-node V100 traces of skypilot-org/spot-traces. Only us-west-2a is copied verbatim in the shared data.
# Those files are exactly `json.dumps(obj)` of {"metadata": {"gap_seconds": 300}, "data": [...]} (checked
# byte for byte on the us-west-2a copy), and the tidy CSV keeps every value, so the us-east-2b and us-west-2c
# files were reconstructed from markets/aws_v100_16node_counts.csv.gz to obtain their sha256. Their lengths
# and contents also agree with the public copies of those two files.
_AWS16_DIR = "availability/16-node/aws-08-27-2023"
_AWS16_US_WEST_2A = _skypilot(
    "availability__16-node__aws-08-27-2023__us-west-2a_v100_1.json",
    "0aae822d720585aa435b6a04248d2bd21ec1cdaab112e6cbfb23b12f5f664078",
)
_AWS16_SOURCES = (
    ("us-east-2b", Source(SKYPILOT, f"{_AWS16_DIR}/us-east-2b_v100_1.json",
                          "fa1f117fd25696aa36250d73f4a47954a281c04243cadbe47074b9ae4a70659f")),
    ("us-west-2a", _AWS16_US_WEST_2A.source),
    ("us-west-2c", Source(SKYPILOT, f"{_AWS16_DIR}/us-west-2c_v100_1.json",
                          "0a540de491d1e1764c1e913ecef04e0475717acb328cf1a8d601948cac138c83")),
)

_ENTRIES: tuple[Entry, ...] = (
    # --- markets/: tidy CSVs; sha256 of the decompressed content (markets/SHA256SUMS) ---
    Entry(
        "markets/gcp_a100_counts.csv.gz", "rebuild",
        "c60045252168ee70f851012a55cbbbe3ac9d6d74e794290c37f6f9495b5c9fec",
        recipe=CountsRecipe(
            cloud="gcp", gpu="A100-40GB", requested=4, start="2023-01-01T00:00:00Z", spot_price="",
            on_demand_price="", zones=tuple((zone, e.source) for zone, e in zip(_GCP1_ZONES, _GCP1, strict=True)),
        ),
    ),
    Entry(
        "markets/aws_v100_16node_counts.csv.gz", "rebuild",
        "5540a024b8c5267d969e04545d2bb56ee678264fcf0b6e1a6627cf33094b131a",
        recipe=CountsRecipe(
            cloud="aws", gpu="V100-16GB", requested=16, start="2023-08-27T00:00:00Z", spot_price="",
            on_demand_price="3.0600", zones=_AWS16_SOURCES,
        ),
    ),
    _local(
        "markets/gcp_h100_probes.csv.gz", "1b5e2d6e863b707634f01ac76310a9963acd8c3198e98519511121ab0e19dd15",
        f"not rebuildable here: derived from the 2,104 probe-round files {SKYNOMAD.owner}/{SKYNOMAD.name}:"
        "data/h100_16_runs/*.json plus data/spot_price_cache/gcp/*.json, whose names and sha256 are not pinned "
        "here (no local copies of those sources)",
    ),
    _local(
        "markets/aws_v100_p3.2xlarge.csv.gz", "3ca9d9c4e35c54e6fcdab6c07c1274567ccae73500c73fb6ca023009a0cbedf1",
        f"not rebuildable here: derived from {SKYNOMAD.owner}/{SKYNOMAD.name}:"
        "data/real/availability/2023-02-15/processed/<zone>_v100_1.csv and data/v100_spot_prices.json, whose "
        "exact bytes, formatting and sha256 are unknown here (no local copies of those sources)",
    ),
    # --- markets/gpu-price-tracker/: marketplace snapshots (MIT), sha256 of the uncompressed source files ---
    _gpu_price_tracker("A100_80GB_PCIe", "d92769aca79c5605225130b8fd573d726f75189aa98064c60c1115ee7b816802"),
    _gpu_price_tracker("A100_80GB_SXM4", "4db90a6fe682556471346b8648f1532fa8d4baf622e75bc71a004a1926bf782d"),
    _gpu_price_tracker("H100_80GB_PCIe", "72d8f7924c760d085cb9b8bd41ef33ff22e455a1fafe61f7e944d849a4958a65"),
    _gpu_price_tracker("H100_80GB_SXM5", "686de28f3765a31a520a20f10dc9a2aa8b0c22d8c1cff04a4241963a5aa2e149"),
    # --- sky_spot_traces/: verbatim copies of single repository files ---
    _skypilot("availability__1-node__aws-02-15-2023__us-east-1a_v100_1.json",
              "cf87a4e199af5178fab1f899b32ddebc717ed2bf5aa0ff7530af264cff0624a1"),
    _skypilot("availability__1-node__aws-02-15-2023__us-west-2a_v100_1.json",
              "2f67ddba78f9bfe2df31e4c56bc480bbc98771bca6c3a33b2b9e5a105909c53a"),
    _skypilot("availability__1-node__aws-10-26-2022__us-west-2a_v100_1.json",
              "51100f536cec660cd324125f02cdb45a4bdda3ccfdad790a1842b9c94bd365e2"),
    _AWS16_US_WEST_2A,
    _skypilot("preemption__1-node__aws-04-22-2023__us-east-1f_v100_1.json",
              "05dd39a548ed2714d23c19188b5385051547cd3650d3327c2bee90be92893dbc"),
    _skypilot("preemption__4-node__aws-08-03-2023__us-east-1f_v100_1.json",
              "bfd67f8b3bfb267f3145e22ff1c52a036e0151ad2c3826f08d7668c54fd60dbe"),
    *_GCP1,
    _spothedge("AWS1__us-east-1f_v100_1.json", "4deffd1fed38ee645a734d39699b2a5071b2072b64e6ffb13dc776a47767b2f3"),
    _verbatim("skynomad-gcp-h100", "us-central1_a3-highgpu-8g.json", SKYNOMAD,
              "data/spot_price_cache/gcp/us-central1_a3-highgpu-8g.json",
              "20d9aab0bd6d3f072614c9a76597a1c407b13a56a6193b27f0875f16ada6bd2c"),
    # --- traces/: cluster job traces (CoTune workloads), verbatim copies of single repository files ---
    Entry(
        "traces/alibaba-gpu-v2023/openb_pod_list_default.csv", "verbatim",
        "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8",
        source=Source(Repo("alibaba", "clusterdata", "50a91c7c74abe3b658188dc78ac1dd302970d40c"),
                      "cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv",
                      "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8"),
    ),
    Entry(
        "traces/philly/philly_job_runtime_seconds.csv", "verbatim",
        "e99015baaea66833ebeac68d27c994aa13d83847f73b4a7c7dc71fe94b395247",
        source=Source(Repo("alibaba", "clusterdata", "1d729891010857ac8edc60881beaa582fec94ae2"),
                      "cluster-trace-gpu-v2020/analysis/philly_runtime.csv",
                      "e99015baaea66833ebeac68d27c994aa13d83847f73b4a7c7dc71fe94b395247"),
    ),
    Entry(
        "traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv", "verbatim",
        "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5",
        source=Source(ALIBABA_GPU_2023, "cluster-trace-gpu-v2023/csv/openb_node_list_gpu_node.csv",
                      "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5"),
    ),
    # --- traces/: job-level GPU cluster traces (spotlab.cluster.job_table), gzip'd copies of repository files ---
    _gzip_trace("philly-pollux/philly.csv.gz", POLLUX_ARTIFACT, "simulator/traces/philly.csv",
                "ebffb3dd1589bdf4e7bcd74496201c5ded1d557d498ee14f560463f37ec353da"),
    _gzip_trace("helios-gpw/helios_data_training.csv.gz", GEN_PARALLEL_WORKLOADS,
                "Helios/training_data/helios_data_training.csv",
                "042b2648eb850b8fbfa9a686a743e7dbe0ea7dbab1e4e0887bb39c755f7e44fa"),
    _gzip_trace("philly-gpw/philly_data_training.csv.gz", GEN_PARALLEL_WORKLOADS,
                "Philly/training_data/philly_data_training.csv",
                "98d2ca0f525309a4d2a3d6b9996cf9b79f3e656e8c47bdc94a7d12b4a7a192c0"),
    *(
        _itp_cluster(i + 1, sha) for i, sha in enumerate((
            "27d707f576fce5637f9efec43f610da3d335f36e3c6fd4ded2f5bccfce05974a",
            "7a5849e73aff9f9bc33f87c9bacadf8aab2f3a9e7bc5d70956f5cbf40126526c",
            "282d765c5289ab0ba870f494dd2c67893f9d16d726fdc8a51f13b7412515dbf8",
            "247850e4265f35749e98d15e82a67765301e81272334265f1fe60d65787892a9",
            "1553359ddd673a0ffc531ca10e73ba729dbacbce905ce878dbb8499d2dbed0fb",
            "52c0d9247d1de9b19a8bdafc25137daf6fa04f274ad3a2eb6dac51226ac2362e",
            "d4f46f32e2965c2265b2675c070565a86e40bff45733c828c5767bc0b8c1b318",
        ))
    ),
    # --- sky_spot_traces/: members of tar archives or curated files: local only ---
    _local("sky_spot_traces/skynomad-gcp-h100/us-central1-a_h100_16__full.json",
           "bba0d39404eadca0d63f71f982a196ee404aa4d8e5e80f3a665f1355abe6173d", _SKYNOMAD_REASON),
    _local("sky_spot_traces/skynomad-gcp-h100/us-east4-a_h100_16__full.json",
           "567b572956a16e0779bf70273afb0f10d43ffa60edf7535b277126a1936ad894", _SKYNOMAD_REASON),
    _local("sky_spot_traces/skynomad-gcp-h100/us-west1-b_h100_16__full.json",
           "048ca2f2d4047f5e62e79cb81abfc8593ae528a7156dfa5519de7d46f3020b70", _SKYNOMAD_REASON),
    _local("sky_spot_traces/skynomad-gcp-h100/us-central1-a_h100_16__window0.json",
           "190f6dcfa18d4d74ed20207dba397e96fbbca93b2909d1996be58de74b2dd440", _SKYNOMAD_REASON),
    *(
        _adrs_member(f"ping_based__{env}.json", f"real/ping_based/{env}.json", sha)
        for env, sha in zip(ADRS_ENVS, _ADRS_PING_SHA256, strict=True)
    ),
    _local("sky_spot_traces/adrs-cant-be-late-traces/ping_based__stats.tsv",
           "6e1d23c4e71b7d9237835744343195b461a12ff47cfa3d8ade03011f367cab8f", _ADRS_REASON),
    *(
        _adrs_member(f"random_start__overhead0.10__us-west-2a_v100_1__{i}.json",
                     _ADRS_WINDOW_FILE.format(env="us-west-2a_v100_1", window=i), sha)
        for i, sha in enumerate((
            "de1b982d7ef75f4df2a71035fa73404e8b6abcf66f0d8997de428423d58cbb26",
            "5853ea8cc30a8f164c49f47c88443dbc8ec90cbfd2f8f2471575e7e669f544d6",
            "8dc93c441d02215094b3316555ff345208b49358e0beab1dcdc825a6e7054380",
        ))
    ),
    Entry("sky_spot_traces/adrs-cant-be-late-traces/random_start__us-west-2a_v100_1__windows.csv", "windows",
          "d70ba01b4fd2eb4e7290e2b560f6bf4fe7a30e4197ebaf37e6077d4b6993fd83",
          windows=WindowsRecipe(ADRS_TRACES, _ADRS_WINDOW_FILE, ("us-west-2a_v100_1",), tuple(range(300)),
                                ("window", "start_tick", "end_tick"))),
    Entry("sky_spot_traces/adrs-cant-be-late-traces/leaderboard_windows.csv", "windows",
          "fe8db8c2dc4c3b0e4771eb927cacc20403eaeff26b518e732f624be5791e8d62",
          windows=WindowsRecipe(ADRS_TRACES, _ADRS_WINDOW_FILE, ADRS_ENVS, ADRS_LEADERBOARD_WINDOWS,
                                ("env", "window", "start_tick", "end_tick"))),
)

REGISTRY: Mapping[str, Entry] = MappingProxyType({e.relpath: e for e in _ENTRIES})

# Sources that are also verbatim datasets: resolved through the dataset (local root first, then cache).
SOURCE_DATASET: Mapping[Source, str] = MappingProxyType(
    {e.source: e.relpath for e in _ENTRIES if e.kind == "verbatim" and e.source is not None}
)
