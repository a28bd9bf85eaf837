"""Find the real data files, or fetch them from their pinned public sources.

The same code runs on a machine with the shared data folder, on a laptop with only a network connection,
and in CI with neither, so a file is looked up in this order:

1. ``$SPOTLAB_DATA`` (if set it must exist: a typo should not silently fall through to other data);
2. a ``shared/data`` folder next to the repository (``<repo>/../shared/data``) or next to the working
   directory (``./../shared/data``);
3. a download cache (``$SPOTLAB_CACHE``, default ``pooch.os_cache("spotlab")``), filled from the public
   repositories at pinned commits (``$SPOTLAB_DATA_URL`` replaces ``https://raw.githubusercontent.com``).

Every downloaded or rebuilt byte is checked against a sha256 from the registry (:mod:`spotlab.data.catalogue`);
a mismatch is an error, never a silently different file.
"""

from __future__ import annotations

import datetime as dt
import difflib
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import tempfile
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import DataNotFoundError, SourceUnavailable
from .catalogue import (
    CSV_HEADER,
    GITHUB_RAW,
    REGISTRY,
    SOURCE_DATASET,
    CountsRecipe,
    Entry,
    Source,
)

__all__ = ["ENV_CACHE", "ENV_DATA", "ENV_URL", "cache_dir", "data_root", "dataset_path", "list_datasets"]

ENV_DATA = "SPOTLAB_DATA"
ENV_CACHE = "SPOTLAB_CACHE"
ENV_URL = "SPOTLAB_DATA_URL"

_REPO_ROOT = Path(__file__).resolve().parents[2]
_TIMEOUT_S = 60



@dataclass(frozen=True)
class _Where:
    """The resolved places for one lookup, fixed once so the error can report exactly what was tried."""

    root: Path | None
    cache: Path
    base_url: str
    download: bool


# --------------------------------------------------------------------------------------------- public API


def data_root(explicit: str | Path | None = None) -> Path | None:
    """The local data folder to use (first that exists), or None when only the download cache is left.

    An explicit folder or ``$SPOTLAB_DATA`` that does not exist is an error rather than skipped, so a typo
    cannot quietly select different data.
    """
    for cand in _local_candidates(explicit):
        if cand.path is None:
            continue
        if cand.path.is_dir():
            return cand.path
        if cand.required:
            raise DataNotFoundError(
                f"data folder {cand.path} (from {cand.label}) does not exist. Point it at the folder holding "
                "markets/ and sky_spot_traces/, or unset it to use ../shared/data or the download cache."
            )
    return None


def cache_dir(explicit: str | Path | None = None) -> Path:
    """Where downloads and rebuilt files go: ``explicit``, else ``$SPOTLAB_CACHE``, else the OS user cache."""
    if explicit is not None:
        return Path(explicit).expanduser()
    env = os.environ.get(ENV_CACHE)
    return Path(env).expanduser() if env else Path(_pooch().os_cache("spotlab"))


def _pooch() -> Any:
    """pooch, imported when first needed and without tqdm's "IProgress not found" warning, which its import of
    tqdm.auto prints in a Jupyter kernel without ipywidgets (its downloads here draw no bar)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        import pooch

    return pooch


def list_datasets() -> list[str]:
    """Relative paths the registry knows (downloadable or not), for discovery and for error hints."""
    return sorted(REGISTRY)


def dataset_path(
    relpath: str,
    root: str | Path | None = None,
    download: bool = True,
    *,
    base_url: str | None = None,
    cache: str | Path | None = None,
) -> Path:
    """Path of a data file such as ``"markets/gcp_a100_counts.csv.gz"``, fetching or rebuilding it if needed.

    Local copies win (they are what the rest of the team uses); otherwise the file comes from the cache,
    filled from the pinned public source when ``download`` is true. ``base_url`` (or ``$SPOTLAB_DATA_URL``)
    replaces ``https://raw.githubusercontent.com``, e.g. to use a mirror. Raises one ``DataNotFoundError``
    listing every place tried and how to fix it.
    """
    rel = _normalise(relpath)
    where = _Where(
        root=data_root(root),
        cache=cache_dir(cache),
        base_url=(base_url or os.environ.get(ENV_URL) or GITHUB_RAW).rstrip("/"),
        download=download,
    )
    if where.root is not None and (where.root / rel).is_file():
        return where.root / rel
    try:
        return _from_cache(rel, where)
    except SourceUnavailable as exc:
        raise DataNotFoundError(_not_found_message(rel, root, where, str(exc))) from None


# ------------------------------------------------------------------------------------------- local lookup


def _normalise(relpath: str) -> str:
    rel = PurePosixPath(str(relpath).replace("\\", "/"))
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise DataNotFoundError(
            f"{relpath!r} is not a path relative to the data folder (e.g. 'markets/gcp_a100_counts.csv.gz')."
        )
    return rel.as_posix()


@dataclass(frozen=True)
class _Candidate:
    """A possible local root; ``required`` ones were asked for explicitly and must exist."""

    label: str
    path: Path | None
    required: bool = False


def _local_candidates(explicit: str | Path | None) -> list[_Candidate]:
    """Local roots in priority order; the labels are reused verbatim in error messages."""
    if explicit is not None:
        return [_Candidate("the root= argument", Path(explicit).expanduser(), required=True)]
    env = os.environ.get(ENV_DATA)
    return [
        _Candidate(f"${ENV_DATA}", Path(env).expanduser() if env else None, required=True),
        _Candidate("<repo>/../shared/data", (_REPO_ROOT.parent / "shared" / "data").resolve()),
        _Candidate("./../shared/data (from the working dir)", (Path.cwd().parent / "shared" / "data").resolve()),
    ]


# ----------------------------------------------------------------------------------------- cache/download


def _from_cache(rel: str, where: _Where) -> Path:
    entry = REGISTRY.get(rel)
    if entry is None:
        close = difflib.get_close_matches(rel, list(REGISTRY), n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else " See spotlab.data.locate.list_datasets()."
        raise SourceUnavailable(f"not in the download registry, so it cannot be fetched.{hint}")
    if entry.kind == "local":
        raise SourceUnavailable(f"not downloadable: {entry.reason}.")
    if entry.kind == "verbatim":
        assert entry.source is not None
        return _fetch(entry.source, where.cache / rel, where, label=rel)
    if entry.kind == "gzip":
        return _compressed(entry, where)
    if entry.kind == "member":
        return _archive_member(entry, where)
    if entry.kind == "windows":
        return _archive_windows(entry, where)
    assert entry.recipe is not None and entry.sha256 is not None
    return _rebuild(entry, where)


def _fetch(source: Source, target: Path, where: _Where, label: str) -> Path:
    """A verified copy of ``source`` at ``target``: reuse a good cached copy, else download through pooch."""
    url = source.url(where.base_url)
    if target.is_file():
        if _sha256(target.read_bytes()) == source.sha256:
            return target
        if not where.download:
            raise SourceUnavailable(
                f"the cached copy {target} has the wrong sha256 and download=False forbids fetching it again."
            )
    if not where.download:
        raise SourceUnavailable(f"not in the cache ({target}) and download=False (source: {url}).")
    try:
        pooch = _pooch()
        fetched = pooch.retrieve(
            url,
            known_hash=f"sha256:{source.sha256}",
            fname=target.name,
            path=target.parent,
            downloader=pooch.HTTPDownloader(progressbar=False, timeout=_TIMEOUT_S),
        )
    except ValueError as exc:  # pooch reports a hash mismatch (and a malformed URL) as ValueError
        got = re.search(r"but got ([0-9a-fA-F]{64})", str(exc))
        if got is None:
            raise SourceUnavailable(f"download of {label} from {url} failed: {exc}.") from None
        raise SourceUnavailable(
            f"download of {label} from {url} has sha256 {got.group(1)} but the "
            f"registry expects {source.sha256}; the file was discarded (corrupted transfer, wrong mirror, or "
            f"the source changed)."
        ) from None
    except OSError as exc:  # requests' errors (HTTP 404, connection refused, timeout) are OSErrors
        raise SourceUnavailable(f"download of {label} from {url} failed: {exc}.") from None
    return Path(fetched)


def _source_file(source: Source, where: _Where) -> Path:
    """A rebuild input: via its verbatim dataset when it is one (so local copies are used), else the cache."""
    rel = SOURCE_DATASET.get(source)
    if rel is not None:
        local = where.root / rel if where.root is not None else None
        if local is not None and local.is_file() and _sha256(local.read_bytes()) == source.sha256:
            return local
        return _fetch(source, where.cache / rel, where, label=rel)
    target = where.cache / "sources" / source.repo.owner / source.repo.name / source.repo.commit / source.path
    return _fetch(source, target, where, label=source.path)


def _rebuild(entry: Entry, where: _Where) -> Path:
    """Re-derive a tidy CSV from its sources into the cache, checking the decompressed sha256."""
    assert entry.recipe is not None and entry.sha256 is not None
    target = where.cache / entry.relpath
    if target.is_file() and _sha256(_gunzip(target)) == entry.sha256:
        return target
    traces = [json.loads(_source_file(src, where).read_bytes()) for _, src in entry.recipe.zones]
    text = _render_counts_csv(entry.recipe, traces)
    got = _sha256(text)
    if got != entry.sha256:
        raise SourceUnavailable(
            f"the rebuilt {entry.relpath} has sha256 {got} but markets/SHA256SUMS says {entry.sha256}; "
            f"nothing was written (the sources or the derivation do not match the published file)."
        )
    _write_atomic(target, _gzip(text))
    return target


def _compressed(entry: Entry, where: _Where) -> Path:
    """A source kept gzip'd under its relpath (like the shared copy): fetch it verbatim, compress, check."""
    assert entry.source is not None and entry.sha256 is not None
    target = where.cache / entry.relpath
    if target.is_file() and _sha256(_gunzip(target)) == entry.sha256:
        return target
    raw = _source_file(entry.source, where).read_bytes()
    if _sha256(raw) != entry.sha256:  # _fetch already checked it; a changed cache file must not slip through
        raise SourceUnavailable(f"the source of {entry.relpath} in the cache no longer has sha256 {entry.sha256}.")
    _write_atomic(target, _gzip(raw))
    return target


def _archive_member(entry: Entry, where: _Where) -> Path:
    """One file of a pinned tar archive: fetch and check the archive, extract the member, check its sha256."""
    assert entry.source is not None and entry.sha256 is not None
    target = where.cache / entry.relpath
    packed = entry.relpath.endswith(".gz") and not entry.member.endswith(".gz")  # kept gzip'd like the local copy
    if target.is_file() and _sha256(_gunzip(target) if packed else target.read_bytes()) == entry.sha256:
        return target
    with _open_archive(entry.source, where) as tar:
        raw = _read_members(tar, [entry.member], entry.source)[entry.member]
    got = _sha256(raw)
    if got != entry.sha256:
        raise SourceUnavailable(f"{entry.member} in the archive {entry.source.path} has sha256 {got} but the registry "
                           f"expects {entry.sha256}; nothing was written.")
    _write_atomic(target, _gzip(raw) if packed else raw)
    return target


def _archive_windows(entry: Entry, where: _Where) -> Path:
    """A windows CSV rebuilt from the window files of a pinned archive, checked against its sha256."""
    recipe = entry.windows
    assert recipe is not None and entry.sha256 is not None
    target = where.cache / entry.relpath
    if target.is_file() and _sha256(target.read_bytes()) == entry.sha256:
        return target
    names = {(env, w): recipe.member.format(env=env, window=w) for env in recipe.envs for w in recipe.windows}
    with _open_archive(recipe.archive, where) as tar:
        files = _read_members(tar, list(names.values()), recipe.archive)
    bounds = {}
    for key, name in names.items():
        try:
            meta = json.loads(files[name])["metadata"]
            bounds[key] = (int(meta["start_time"]), int(meta["end_time"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise SourceUnavailable(f"{name} in {recipe.archive.path} has no metadata.start_time/end_time "
                               f"({type(exc).__name__}: {exc}).") from None
    text = _render_windows_csv(recipe.columns, bounds)
    got = _sha256(text)
    if got != entry.sha256:
        raise SourceUnavailable(f"the rebuilt {entry.relpath} has sha256 {got} but the registry expects "
                           f"{entry.sha256}; nothing was written.")
    _write_atomic(target, text)
    return target


def _render_windows_csv(columns: tuple[str, ...], bounds: dict[tuple[str, int], tuple[int, int]]) -> bytes:
    """CSV bytes, one row per (env, window) in the given order; pure so the format can be tested alone."""
    lines = [",".join(columns)]
    for (env, w), (start, end) in bounds.items():
        row = {"env": env, "window": w, "start_tick": start, "end_tick": end}
        lines.append(",".join(str(row[c]) for c in columns))
    return ("\n".join(lines) + "\n").encode()


def _open_archive(source: Source, where: _Where) -> tarfile.TarFile:
    path = _source_file(source, where)
    try:
        return tarfile.open(path, mode="r:*")
    except (tarfile.TarError, OSError) as exc:
        raise SourceUnavailable(f"the archive {path} cannot be read as tar ({exc}).") from None


def _read_members(tar: tarfile.TarFile, members: list[str], source: Source) -> dict[str, bytes]:
    """Bytes of each of ``members`` in one pass over the (compressed) archive; a member may also sit under a
    top-level folder (``<top>/member``), as archives often have. A missing one is named."""
    wanted = set(members)
    found: dict[str, bytes] = {}
    try:
        for info in tar:
            if not info.isfile():
                continue
            name = info.name.removeprefix("./")
            key = name if name in wanted else name.partition("/")[2]
            if key in wanted and key not in found:
                fh = tar.extractfile(info)
                assert fh is not None
                found[key] = fh.read()
                if len(found) == len(wanted):
                    break
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt archive
        raise SourceUnavailable(f"the archive {source.path} is damaged ({type(exc).__name__}: {exc}).") from None
    missing = [m for m in members if m not in found]
    if missing:
        raise SourceUnavailable(f"the archive {source.path} has no file {missing[0]}"
                           f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}.")
    return found


def _render_counts_csv(recipe: CountsRecipe, traces: list[dict]) -> bytes:
    """The tidy CSV bytes for ``recipe`` from the parsed JSON traces (same order as ``recipe.zones``).

    Kept pure so the derivation rule of markets/README.md can be tested without any file or network.
    """
    start = dt.datetime.strptime(recipe.start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    out = io.StringIO()
    out.write(CSV_HEADER + "\n")
    for (zone, _), trace in zip(recipe.zones, traces, strict=True):
        gap = int(trace["metadata"]["gap_seconds"])
        fixed = f"{recipe.cloud},{zone},{recipe.gpu},{recipe.requested}"
        for i, value in enumerate(trace["data"]):
            when = (start + dt.timedelta(seconds=i * gap)).strftime("%Y-%m-%dT%H:%M:%SZ")
            out.write(f"{when},{fixed},{int(value)},{recipe.spot_price},{recipe.on_demand_price}\n")
    return out.getvalue().encode()


# ------------------------------------------------------------------------------------------------ helpers


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _gunzip(path: Path) -> bytes:
    try:
        return gzip.decompress(path.read_bytes())
    except (OSError, EOFError):
        return b""


def _gzip(data: bytes) -> bytes:
    """Deterministic gzip (mtime 0, no file name), like the published files, so rebuilds are byte-stable."""
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return buf.getvalue()


def _write_atomic(target: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so a crash never leaves a half-written file in the cache."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name, suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _not_found_message(rel: str, explicit: str | Path | None, where: _Where, download_result: str) -> str:
    lines = [f"Data file {rel!r} was not found. Looked in:"]
    passed_root = False
    for cand in _local_candidates(explicit):
        if cand.path is None:
            status = "not set"
        elif passed_root:
            status = f"{cand.path}: not searched (an earlier folder exists and takes precedence)"
        elif cand.path == where.root:
            status, passed_root = f"{cand.path}: no such file there", True
        else:
            status = f"{cand.path}: folder does not exist"
        lines.append(f"  - {cand.label}: {status}")
    lines.append(
        f"  - download cache (${ENV_CACHE}, default pooch.os_cache('spotlab')): {where.cache}: no verified copy"
    )
    lines.append(f"  - download from {where.base_url} (${ENV_URL}): {download_result}")
    lines.append(
        "To fix: set SPOTLAB_DATA to a folder that contains "
        f"{rel}, or put the shared data at {_REPO_ROOT.parent / 'shared' / 'data'} (i.e. ../shared/data), "
        "or allow download (download=True) and check the network access or the SPOTLAB_DATA_URL mirror."
    )
    return "\n".join(lines)
