"""The README's examples work as written: every bash block runs (its `make` lines as a dry run: the whole run is
`make reproduce` itself), and every Python block runs. Every `spotlab` command written anywhere in the README or
in docs/ parses: its command exists and so do its options."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from spotlab.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DATA_NEEDED = "../shared/data/"


def _blocks(path: Path, language: str) -> list[tuple[str, str]]:
    text = path.read_text()
    return [(f"{path.name}:{text[:m.start()].count(chr(10)) + 1}", m.group(1))
            for m in re.finditer(rf"```{language}\n(.*?)```", text, flags=re.S)]


def _skip_without_data(block: str) -> None:
    """Skip a block whose data is not on this machine: a path under ../shared/data, or a benchmark scenario by
    name (`spotlab scenario NAME` reads its benchmark's folder of the data and never downloads it)."""
    for rel in re.findall(re.escape(DATA_NEEDED) + r"[\w./-]+", block):
        if not (ROOT / rel).exists():
            pytest.skip(f"{rel} is not on this machine")
    from spotlab.data.locate import data_root
    from spotlab.experiments.zone_benchmarks import LEADERBOARD_DIR, SKYNOMAD_DIR

    for name in re.findall(r"spotlab scenario (\S+)", block):
        folder = {"leaderboard": LEADERBOARD_DIR, "skynomad": SKYNOMAD_DIR}.get(name.split("/")[0])
        base = data_root()
        if folder is not None and (base is None or not (base / folder).is_dir()):
            pytest.skip(f"scenario {name}: {folder} is not on this machine")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # the venv's `spotlab`
    return env


@pytest.mark.slow
@pytest.mark.parametrize("where, block", _blocks(ROOT / "README.md", "bash"), ids=lambda x: str(x)[:40])
def test_readme_bash_blocks_run(where, block):
    _skip_without_data(block)
    script = "set -euo pipefail\nmake() { command make -n \"$@\" >/dev/null; }\n" + block
    run = subprocess.run(["bash", "-c", script], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{where}:\n{run.stderr[-3000:]}"


@pytest.mark.parametrize("where, block", _blocks(ROOT / "README.md", "python"), ids=lambda x: str(x)[:40])
def test_readme_python_blocks_run(where, block):
    _skip_without_data(block)
    run = subprocess.run([sys.executable, "-c", block], cwd=ROOT, env=_env(), capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, f"{where}:\n{run.stderr[-3000:]}"


def _commands() -> list[tuple[str, list[str]]]:
    """Every `spotlab ...` line of a bash block, with the block's simple VAR="..." assignments expanded."""
    out = []
    for doc in DOCS:
        for where, block in _blocks(doc, "bash"):
            text = block.replace("\\\n", " ")
            variables = dict(re.findall(r'^(\w+)="([^"]*)"\s*$', text, flags=re.M))
            for line in text.splitlines():
                line = line.split(" # ")[0].strip()
                if not line.startswith("spotlab "):
                    continue
                for name, value in variables.items():
                    line = line.replace(f"${name}", value)
                out.append((where, shlex.split(line)[1:]))
    return out


@pytest.mark.parametrize("where, argv", _commands(), ids=lambda x: str(x)[:60])
def test_every_documented_command_parses(where, argv):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"{where}: `spotlab {' '.join(argv)}` does not parse (exit {exc.code})")
    assert callable(args.run)
