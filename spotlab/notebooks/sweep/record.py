"""A point's record: `OUT/points/<hash>/record.json`, the one file that says a point is done or failed.

A sweep is resumable because of it: a point with a record is skipped, a point without one is run. A record
is written to a temporary name and renamed in, so a reader (another worker on the shared folder, a later
run, the table) sees a whole record or none, never a torn one, even when its writer dies halfway.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from pathlib import Path

RECORD_FILE = "record.json"


def read_record(point_dir: Path) -> dict | None:
    """The point's record, or None when it has none (a torn file cannot exist: records are renamed in)."""
    try:
        rec = json.loads((Path(point_dir) / RECORD_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return rec if isinstance(rec, dict) and rec.get("status") in ("done", "failed") else None


def write_json_atomic(path: Path, data: dict) -> None:
    """Write `data` as JSON under a temporary name beside `path`, then rename it in: readers see all or nothing."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def utc_now() -> str:
    """The time a record states: UTC, to the second."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
