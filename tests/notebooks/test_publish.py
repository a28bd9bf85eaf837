"""Publishing a full run (`spotlab claims OUT --publish DEST`): what is copied, the stamp, what is refused."""

import json
import shutil
import subprocess

import pytest

from spotlab.errors import OutputError
from spotlab.notebooks.publish import publish


def _run(out, quick=False):
    """An output folder as `make reproduce` leaves it: the claims report, the run's log and figures."""
    out.mkdir(parents=True)
    (out / "README.md").write_text("# Claims\n\n| claim |\n![shown](a.png) ![gone](missing.png)\n")
    (out / "reproduce_log.json").write_text(json.dumps({"quick": quick, "seconds": 1.0}))
    (out / "a.png").write_bytes(b"a")
    (out / "not_shown.png").write_bytes(b"b")
    return out


def test_a_full_run_is_copied_with_the_commit_and_date_that_made_it(tmp_path):
    out = _run(tmp_path / "run" / "paper_figures")
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest" / "stale.png").write_bytes(b"old")  # the last publication's: replaced, not kept
    dest = publish(out, tmp_path / "dest", commit="abc1234", date="2026-12-07")
    lines = (dest / "README.md").read_text().splitlines()
    assert lines[0] == "# Claims" and lines[4] == "| claim |"
    assert lines[2].startswith("*Made by `make reproduce` (full run) at commit `abc1234` on 2026-12-07; published "
                               "with `spotlab claims ")
    assert sorted(p.name for p in dest.iterdir()) == ["README.md", "a.png", "reproduce_log.json"]
    assert json.loads((dest / "reproduce_log.json").read_text())["seconds"] == 1.0


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_stamp_names_the_output_folder_as_its_checkout_does(tmp_path):
    """A run made in a throw-away clone is published as `paper_figures`, not as the clone's path."""
    clone = tmp_path / "clone"
    out = _run(clone / "paper_figures")
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    stamp = (publish(out, tmp_path / "dest", commit="abc1234").joinpath("README.md").read_text().splitlines()[2])
    assert "`spotlab claims paper_figures --publish " in stamp
    assert str(clone) not in stamp


def test_a_quick_run_and_a_folder_without_a_run_are_refused(tmp_path):
    quick = _run(tmp_path / "quick", quick=True)
    with pytest.raises(OutputError, match="quick run"):
        publish(quick, tmp_path / "dest")
    (tmp_path / "empty").mkdir()
    with pytest.raises(OutputError, match="no claims report"):
        publish(tmp_path / "empty", tmp_path / "dest")
    assert not (tmp_path / "dest").exists()
