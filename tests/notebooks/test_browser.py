"""A new user's first minutes, in a real browser: JupyterLab on 127.0.0.1, a jupytext notebook opened by its
URL (the default viewer, as a double click would), run, and a figure rendered in its output area.

Headless Chromium and its driver are Debian packages (`chromium`, `chromium-driver`); when they are missing
and we are root on Debian, the fixture installs them (as `.ci/run` does), otherwise the test is skipped with
the command to run. Notebook 00 is the quick one (analytical profiles: seconds).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from spotlab.notebooks.execute import ROOT

NOTEBOOK = "notebooks/00_throughput_profiles.py"
SETTINGS = ROOT / "jupyterlab-settings" / "overrides.json"
INSTALLED = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
SERVER_CONFIG = ROOT / "jupyterlab-settings" / "jupyter_server_config.json"
SERVER_INSTALLED = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.json"


def _browser() -> tuple[str, str]:
    """Paths of chromium and chromedriver, installing the Debian packages when we can."""
    found = shutil.which("chromium"), shutil.which("chromedriver")
    if all(found):
        return found  # type: ignore[return-value]
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run("apt-get update -qq && apt-get install -y -qq chromium chromium-driver", shell=True,
                       check=False, env=env, capture_output=True, timeout=900)
        found = shutil.which("chromium"), shutil.which("chromedriver")
        if all(found):
            return found  # type: ignore[return-value]
    pytest.skip("headless Chromium not available: apt-get install chromium chromium-driver")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server of this venv on 127.0.0.1 with the project's settings; yields (base URL, token).

    Autosave is switched off on top of the project's settings: the test runs the repository's own notebook
    and must never write it back."""
    pytest.importorskip("jupyterlab")
    if INSTALLED.is_file():  # what `make setup` installed is the project's file
        assert INSTALLED.read_text() == SETTINGS.read_text(), f"{INSTALLED} differs from {SETTINGS}: run make setup"
    settings = json.loads(SETTINGS.read_text())
    settings.setdefault("@jupyterlab/docmanager-extension:plugin", {})["autosave"] = False
    (tmp_path / "overrides.json").write_text(json.dumps(settings))
    port, token = _free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}", "--LabApp.expose_app_in_browser=True",
           f"--LabApp.app_settings_dir={tmp_path}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    if not (SERVER_INSTALLED.is_file() and SERVER_INSTALLED.read_text() == SERVER_CONFIG.read_text()):
        cmd.append("--ServerApp.contents_manager_class=spotlab.notebooks.lab.NotebookContentsManager")
    log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"spotlab-lab-{port}.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start (log: {log.name})")
                time.sleep(0.5)
        yield base, token
    finally:
        for sig, wait in ((15, 20), (9, 5)):  # the server and the kernels it started
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


def _driver(chromium: str, chromedriver: str):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1400,1000"):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(chromedriver), options=opts)


# the notebook panel through the app's own API (exposed by --LabApp.expose_app_in_browser, for tests like this)
PANEL = ("const panel = Array.from(window.jupyterapp.shell.widgets('main'))"
         ".find(w => w.sessionContext && w.content && w.content.widgets);")
KERNEL_IDLE = (f"{PANEL} const k = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;"
               " return !!k && k.status === 'idle' && panel.sessionContext.isReady;")


def _started(driver, timeout: float) -> bool:
    """True once some cell has an execution count or is queued ([*])."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.execute_script("return Array.from(document.querySelectorAll('.jp-InputArea-prompt'))"
                                 ".some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))"):
            return True
        time.sleep(0.5)
    return False


def _wait(driver, script: str, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.mark.slow
def test_notebook_opens_runs_and_shows_a_figure(lab):
    chromium, chromedriver = _browser()
    base, token = lab
    source = ROOT / NOTEBOOK
    before = hashlib.sha256(source.read_bytes()).hexdigest()
    driver = _driver(chromium, chromedriver)
    try:
        driver.get(f"{base}/lab/tree/{NOTEBOOK}?token={token}&reset")
        # the default viewer of a .py in this project is the notebook, not the text editor
        _wait(driver, "return document.querySelector('.jp-NotebookPanel .jp-Cell') !== null", 90,
              f"{NOTEBOOK} to open as a notebook")
        assert not driver.execute_script("return document.querySelector('.jp-FileEditor') !== null"), \
            "the notebook opened in the text editor"
        _wait(driver, KERNEL_IDLE, 120, "the notebook's kernel to be ready")
        time.sleep(2)  # kernel info arrives: a notebook whose metadata changes now would turn dirty
        dirty = driver.execute_script("return document.querySelector('.lm-TabBar-tab.jp-mod-dirty') !== null")
        assert not dirty, "opening the notebook marked it modified"
        for _ in range(3):  # a run asked while the kernel was still settling can be dropped: ask again
            driver.execute_script(f"{PANEL} panel.content.activeCellIndex = 0; "
                                  "return window.jupyterapp.commands.execute('notebook:run-all-cells')")
            if _started(driver, 30):
                break
        _wait(driver, "return document.querySelector('.jp-OutputArea-output img, .jp-RenderedImage img') !== null",
              240, "a figure in an output area")
        _wait(driver, "return document.querySelectorAll('.jp-InputArea-prompt').length > 0 && "
                      "Array.from(document.querySelectorAll('.jp-InputArea-prompt'))"
                      ".every(p => !p.textContent.includes('*'))", 120, "every cell to finish")
        errors = driver.execute_script(
            "return Array.from(document.querySelectorAll('.jp-OutputArea-output'))"
            ".map(o => o.textContent).filter(t => t.includes('Traceback')).length")
        assert errors == 0, "a cell raised an error in the browser"
        images = driver.execute_script("return document.querySelectorAll('.jp-OutputArea-output img').length")
        assert images >= 2, f"expected the notebook's figures inline, found {images} image(s)"
    finally:
        driver.quit()
    assert hashlib.sha256(source.read_bytes()).hexdigest() == before, "the notebook file was changed on disk"
