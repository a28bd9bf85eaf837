"""Data resolution and verified downloads, against a real HTTP server on 127.0.0.1 (no outside network)."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import pytest

from spotlab.data import locate as data
from spotlab.data.catalogue import REGISTRY, SOURCE_DATASET, Source
from spotlab.errors import DataNotFoundError, SpotlabError

GCP_A100 = "markets/gcp_a100_counts.csv.gz"
AWS_16 = "markets/aws_v100_16node_counts.csv.gz"
SPOTHEDGE_JSON = "sky_spot_traces/spothedge-ae/GCP1__us-west1-b_a100_40gb_8.json"
ADRS_JSON = "sky_spot_traces/adrs-cant-be-late-traces/ping_based__us-west-2a_v100_1.json"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test may see the caller's settings or write to the real user cache."""
    for var in (data.ENV_DATA, data.ENV_URL):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(data.ENV_CACHE, str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def real_root() -> Path:
    """The shared data folder, found by the same resolution the package uses; skip when absent."""
    try:
        root = data.data_root()
    except DataNotFoundError as exc:
        pytest.skip(f"shared data folder not usable: {exc}")
    if root is None or not (root / GCP_A100).is_file():
        pytest.skip("shared data folder (markets/, sky_spot_traces/) not present: set SPOTLAB_DATA to run these")
    return root


@pytest.fixture
def empty_root(tmp_path, monkeypatch) -> Path:
    """An existing but empty $SPOTLAB_DATA, so every registry file has to come through the cache."""
    root = tmp_path / "empty_root"
    root.mkdir()
    monkeypatch.setenv(data.ENV_DATA, str(root))
    return root


def _served_path(serve_dir: Path, src: Source) -> Path:
    return serve_dir / src.repo.owner / src.repo.name / src.repo.commit / src.path


def _aws16_reconstructed(real_root: Path) -> dict[str, bytes]:
    """Source JSONs of the 16-node CSV, rebuilt from it (json.dumps reproduces the published files)."""
    per_zone: dict[str, list[int]] = {}
    for line in gzip.decompress((real_root / AWS_16).read_bytes()).decode().splitlines()[1:]:
        f = line.split(",")
        per_zone.setdefault(f[2], []).append(int(f[5]))
    return {z: json.dumps({"metadata": {"gap_seconds": 300}, "data": v}).encode() for z, v in per_zone.items()}


@pytest.fixture
def serve_dir(tmp_path, real_root) -> Path:
    """Public source files laid out as {owner}/{repo}/{commit}/{path}, copied from the shared folder."""
    out = tmp_path / "served"
    for src, rel in SOURCE_DATASET.items():
        target = _served_path(out, src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(real_root / rel, target)
    aws = _aws16_reconstructed(real_root)
    for zone, src in REGISTRY[AWS_16].recipe.zones:
        target = _served_path(out, src)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(aws[zone])
    return out


@contextmanager
def _http_server(directory: Path) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 (ephemeral port) serving ``directory``; yields its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=str(directory)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def server(serve_dir) -> Iterator[str]:
    with _http_server(serve_dir) as url:
        yield url


# ------------------------------------------------------------------------------------------ resolution


def test_env_var_wins_over_shared_folder(tmp_path, monkeypatch):
    root = tmp_path / "mine"
    (root / "markets").mkdir(parents=True)
    (root / GCP_A100).write_bytes(b"mine")
    monkeypatch.setenv(data.ENV_DATA, str(root))
    assert data.data_root() == root
    assert data.dataset_path(GCP_A100) == root / GCP_A100


def test_explicit_root_wins_over_env(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv(data.ENV_DATA, str(a))
    assert data.data_root(b) == b


def test_env_var_set_but_missing_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(data.ENV_DATA, str(tmp_path / "typo"))
    with pytest.raises(DataNotFoundError, match=r"SPOTLAB_DATA.*does not exist"):
        data.data_root()
    with pytest.raises(DataNotFoundError, match="typo"):
        data.dataset_path(GCP_A100)


def test_shared_folder_next_to_repo_then_next_to_cwd(tmp_path, monkeypatch):
    repo_shared = tmp_path / "r" / "shared" / "data"
    repo_shared.mkdir(parents=True)
    monkeypatch.setattr(data, "_REPO_ROOT", tmp_path / "r" / "repo")
    monkeypatch.chdir(tmp_path)
    assert data.data_root() == repo_shared.resolve()

    monkeypatch.setattr(data, "_REPO_ROOT", tmp_path / "elsewhere" / "repo")
    cwd_shared = tmp_path / "w" / "shared" / "data"
    cwd_shared.mkdir(parents=True)
    (tmp_path / "w" / "work").mkdir()
    monkeypatch.chdir(tmp_path / "w" / "work")
    assert data.data_root() == cwd_shared.resolve()


def test_nothing_found_lists_every_place_and_the_fixes(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "_REPO_ROOT", tmp_path / "nowhere" / "repo")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    assert data.data_root() is None
    with pytest.raises(DataNotFoundError) as info:
        data.dataset_path(SPOTHEDGE_JSON, download=False)
    msg = str(info.value)
    for needle in (
        SPOTHEDGE_JSON,
        "$SPOTLAB_DATA: not set",
        str((tmp_path / "nowhere" / "shared" / "data").resolve()),
        str((tmp_path / "shared" / "data").resolve()),
        "$SPOTLAB_CACHE",
        str(tmp_path / "cache"),
        "download=False",
        "set SPOTLAB_DATA",
        "../shared/data",
        "network",
    ):
        assert needle in msg, needle


def test_list_datasets_and_local_only_reason(empty_root):
    names = data.list_datasets()
    assert GCP_A100 in names and SPOTHEDGE_JSON in names and ADRS_JSON in names
    assert all(REGISTRY[n].sha256 for n in names if REGISTRY[n].kind != "local")
    with pytest.raises(DataNotFoundError, match=r"not downloadable: a file of the tar archive"):
        data.dataset_path("sky_spot_traces/adrs-cant-be-late-traces/ping_based__stats.tsv")
    with pytest.raises(DataNotFoundError, match="not in the download registry"):
        data.dataset_path("markets/no_such_file.csv.gz")


def test_registry_hashes_match_the_shared_copies(real_root):
    for rel, entry in REGISTRY.items():
        path = real_root / rel
        if entry.sha256 is None or not path.is_file():
            continue
        content = gzip.decompress(path.read_bytes()) if rel.endswith(".gz") else path.read_bytes()
        assert _sha(content) == entry.sha256, rel


def test_rebuild_from_local_sources_without_network(real_root, empty_root):
    folder = Path("sky_spot_traces") / "spothedge-ae"
    shutil.copytree(real_root / folder, empty_root / folder)
    path = data.dataset_path(GCP_A100, download=False)
    assert path.is_relative_to(Path(data.cache_dir()))
    assert path.read_bytes() == (real_root / GCP_A100).read_bytes()  # deterministic gzip, byte-identical


# ------------------------------------------------------------------------------- downloads via 127.0.0.1


def test_fetch_verbatim_json_through_pooch(real_root, empty_root, server):
    path = data.dataset_path(SPOTHEDGE_JSON, base_url=server)
    assert path == data.cache_dir() / SPOTHEDGE_JSON
    assert path.read_bytes() == (real_root / SPOTHEDGE_JSON).read_bytes()


def test_rebuild_gcp_a100_counts_from_download(real_root, empty_root, server, monkeypatch):
    monkeypatch.setenv(data.ENV_URL, server)  # the env var route to a mirror
    path = data.dataset_path(GCP_A100)
    assert path == data.cache_dir() / GCP_A100
    assert _sha(gzip.decompress(path.read_bytes())) == REGISTRY[GCP_A100].sha256
    assert path.read_bytes() == (real_root / GCP_A100).read_bytes()
    assert data.dataset_path(GCP_A100, download=False) == path  # served from the cache afterwards


def test_rebuild_aws_16node_counts_from_download(real_root, empty_root, server):
    path = data.dataset_path(AWS_16, base_url=server)
    assert _sha(gzip.decompress(path.read_bytes())) == REGISTRY[AWS_16].sha256


def test_corrupted_download_names_file_and_both_hashes(empty_root, serve_dir, server):
    src = REGISTRY[SPOTHEDGE_JSON].source
    served = _served_path(serve_dir, src)
    corrupted = served.read_bytes().replace(b"0", b"1", 1)
    served.write_bytes(corrupted)
    with pytest.raises(SpotlabError) as info:
        data.dataset_path(SPOTHEDGE_JSON, base_url=server)
    msg = str(info.value)
    assert isinstance(info.value, DataNotFoundError)
    assert SPOTHEDGE_JSON in msg and src.sha256 in msg and _sha(corrupted) in msg
    assert not (data.cache_dir() / SPOTHEDGE_JSON).exists()
    # a rebuild that needs the corrupted source fails the same way and writes nothing
    with pytest.raises(DataNotFoundError, match=_sha(corrupted)):
        data.dataset_path(GCP_A100, base_url=server)
    assert not (data.cache_dir() / GCP_A100).exists()


def test_server_404_gives_not_found_error(tmp_path, empty_root):
    (tmp_path / "nothing").mkdir()
    with _http_server(tmp_path / "nothing") as base:
        with pytest.raises(DataNotFoundError) as info:
            data.dataset_path(SPOTHEDGE_JSON, base_url=base)
    msg = str(info.value)
    assert "404" in msg and base in msg and "$SPOTLAB_DATA" in msg and "network" in msg
