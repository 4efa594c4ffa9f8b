"""Fixtures of the Python module's tests: the real tiny model from the
shared reference data (a missing file fails, never skips), the clmcache
binary, and a `clmcache serve` child process on a port it picks itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import clmcache


def shared_dir() -> Path:
    return Path(os.environ.get("CLMCACHE_SHARED") or os.environ["CLMCACHE_SHARED_DEFAULT"])


@pytest.fixture(scope="session")
def model_path() -> str:
    path = shared_dir() / "models" / "stories260K.gguf"
    assert path.is_file(), f"reference model missing: {path}"
    return str(path)


@pytest.fixture(scope="session")
def binary() -> str:
    path = os.environ["CLMCACHE_BINARY"]
    assert Path(path).is_file(), f"clmcache binary missing: {path}"
    return path


@pytest.fixture
def engine(model_path):
    with clmcache.Engine(model_path, ctx_size=512, threads=2) as e:
        yield e


class Server:
    """`clmcache serve --port 0` with the given flags, stopped by SIGTERM."""

    def __init__(self, binary: str, args: list[str]):
        self.proc = subprocess.Popen(
            [binary, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            m = re.search(r"on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            raise AssertionError("clmcache serve exited before listening")

    def post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as res:
            return json.loads(res.read())

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture
def serve(binary):
    started: list[Server] = []

    def start(*args: str) -> Server:
        s = Server(binary, list(args))
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def run_python(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs code in a fresh interpreter that imports the same clmcache."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout)
