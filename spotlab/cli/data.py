"""`spotlab data`: where spotlab finds its datasets (`spotlab.data.locate`)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(commands: Any) -> None:
    d = commands.add_parser("data", help="show where spotlab finds its datasets")
    d.add_argument("--json", action="store_true", help="print one JSON object (data root, cache, datasets)")
    d.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..data.locate import cache_dir, data_root, list_datasets

    root = data_root()
    info = {"data_root": str(root) if root else None, "cache": str(cache_dir()), "datasets": list_datasets()}
    if args.json:
        print(json.dumps(info))
    else:
        print(f"data root: {info['data_root'] or '(none found: set SPOTLAB_DATA)'}\ncache:     {info['cache']}")
        for name in info["datasets"]:
            print(f"  {name}")
    return 0
