"""JupyterLab opens notebooks/*.py as notebooks: the shipped setting, read back from a real server.

The project ships ``jupyter-config/labconfig/default_setting_overrides.json``; the wheel (and
``pip install -e .``) installs it into the environment's ``etc/jupyter/labconfig``. The test
starts JupyterLab on loopback with that folder on its config path and reads the effective
setting over the REST API, so a wrong plugin id, key or factory name fails here.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "jupyter-config"
OVERRIDES = CONFIG / "labconfig" / "default_setting_overrides.json"
DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"

pytest.importorskip("jupyterlab", reason="JupyterLab is not installed")
pytest.importorskip("jupytext", reason="jupytext is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str, token: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_the_wheel_installs_the_setting_where_jupyterlab_reads_it() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    shared = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    target = shared["jupyter-config/labconfig/default_setting_overrides.json"]
    assert target == "etc/jupyter/labconfig/default_setting_overrides.json"
    assert OVERRIDES.is_file()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A JupyterLab server on 127.0.0.1 serving the checkout; stopped after the tests (and by
    itself after two idle minutes should the test process die)."""
    home = tmp_path_factory.mktemp("jupyter-home")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        # the repository's config folder, as the installed copy in etc/jupyter would be
        "JUPYTER_CONFIG_PATH": str(CONFIG),
        # no user settings or config: only the shipped defaults decide
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
    }
    args = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={ROOT}",
        "--ServerApp.shutdown_no_activity_timeout=120",
        "--TerminalsExtensionApp.enabled=False",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # containers often run tests as root
        args.append("--allow-root")
    log = home / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                _get(f"{base}/api/status", token)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start:\n{log.read_text('utf-8')[-3000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.mark.slow
def test_python_files_open_with_the_jupytext_notebook_by_default(lab: tuple[str, str]) -> None:
    base, token = lab
    setting = _get(f"{base}/lab/api/settings/{DOCMANAGER}", token)
    viewers = setting["schema"]["properties"]["defaultViewers"]["default"]
    assert viewers.get("python") == "Jupytext Notebook", viewers
    # no user setting hides the default: the effective value is the shipped one
    assert "defaultViewers" not in (setting.get("settings") or {})
    # the factory named there exists: jupytext's labextension is installed in this lab
    extensions = _get(f"{base}/lab/api/extensions", token)
    names = {e["name"] for e in extensions}
    assert "jupyterlab-jupytext" in names, sorted(names)


@pytest.mark.slow
def test_the_notebooks_open_as_notebooks_through_the_contents_api(lab: tuple[str, str]) -> None:
    base, token = lab
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        model = _get(f"{base}/api/contents/{rel}?type=notebook&content=1", token)
        assert model["type"] == "notebook", rel
        cells = model["content"]["cells"]
        assert [c for c in cells if c["cell_type"] == "markdown"], rel
        assert [c for c in cells if "parameters" in c["metadata"].get("tags", [])], rel
