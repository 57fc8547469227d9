"""``reflect serve``: what a newcomer sees when the extra is missing, and when an export is
refused for its token (logged on the server, answered in the request's encoding)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest


def test_without_the_extra_the_error_names_the_checkout_and_the_index_installs(
    tmp_path: Path,
) -> None:
    # the real command in a process where the serve extra cannot be imported
    code = (
        "import sys; sys.modules['starlette'] = None\n"
        "from agent_reflection.cli import main\n"
        f"main(['serve', '--port', '0', '--db', {str(tmp_path / 'x.duckdb')!r}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 1
    assert "in a checkout of this repository, pip install -e '.[serve]'" in done.stderr
    assert "from the package index, pip install 'agent-reflection[serve]'" in done.stderr
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    serve_line = readme[readme.index("reflect serve    ") :].split("\n", 2)
    assert "pip install -e '.[serve]'" in serve_line[0] + serve_line[1]


def post(url: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


def test_a_refused_token_is_logged_and_a_json_request_gets_a_json_error(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="reflect serve needs the 'serve' extra")
    from google.rpc import status_pb2

    from serve_harness import running_server

    with running_server(tmp_path / "live.duckdb", "--token", "s3cret-token") as server:
        server.wait_line("or in the shell: ")
        url = server.endpoint + "/v1/logs"
        code, kind, body = post(url, b"{}", "application/json")
        assert (code, kind) == (401, "application/json")
        assert json.loads(body) == {"code": 16, "message": "missing or wrong bearer token"}
        logged = server.wait_line("401 for POST /v1/logs")
        assert "from 127.0.0.1: no bearer token (--token / REFLECT_SERVE_TOKEN)" in logged
        # a protobuf request still gets the protobuf google.rpc.Status
        code, kind, body = post(url, b"", "application/x-protobuf")
        assert (code, kind) == (401, "application/x-protobuf")
        assert status_pb2.Status.FromString(body).code == 16
