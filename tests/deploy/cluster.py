"""Real parts on loopback for the deployment tests: `clmcache serve`
processes, a private redis-server and HAProxy (Debian's), each started on a
free port with its output in a log file, and stopped at the end. Nothing
here waits without a bound."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path


def shared_dir() -> Path:
    return Path(os.environ.get("CLMCACHE_SHARED") or os.environ["CLMCACHE_SHARED_DEFAULT"])


def model_path() -> str:
    path = shared_dir() / "models" / "stories260K.gguf"
    assert path.is_file(), f"reference model missing: {path}"
    return str(path)


def binary() -> str:
    path = os.environ["CLMCACHE_BINARY"]
    assert Path(path).is_file(), f"clmcache binary missing: {path}"
    return path


def tool(name: str) -> str:
    found = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")
    assert found, f"{name} is missing (scripts/install-deps.sh --test installs it)"
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def http(port: int, method: str, path: str, body: dict | None = None, headers: dict | None = None,
         timeout_s: float = 60):
    """(status, JSON body, response headers) of one request to 127.0.0.1:port;
    the headers are looked up without regard to case."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as r:
            return r.status, json.loads(r.read() or b"{}"), r.headers
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            payload = json.loads(raw or b"{}")
        except ValueError:
            payload = {"raw": raw.decode(errors="replace")}
        return e.code, payload, e.headers


class Process:
    def __init__(self, args: list[str], log: Path):
        self.log_path = log
        self._log = open(log, "w")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, text=True)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self):
        if self.alive():
            self.proc.kill()
        self.proc.wait(timeout=30)

    def terminate(self, timeout_s: float = 30) -> int:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise AssertionError(f"{self.proc.args[0]} did not stop on SIGTERM")

    def close(self):
        self.kill()
        self._log.close()


class ClmServer(Process):
    """`clmcache serve --port 0` with the tiny model; port read from its log."""

    def __init__(self, name: str, workdir: Path, args: list[str]):
        super().__init__([binary(), "serve", "--port", "0", "-m", model_path(), *args], workdir / f"{name}.log")
        self.name = name
        found = wait_for(lambda: self._port() or (not self.alive() and "exited"), 60, f"{name} to listen")
        assert found != "exited", f"{name} exited:\n{self.log()}"
        self.port = found

    def _port(self):
        m = re.search(r"on http://[^:]+:(\d+)", self.log())
        return int(m.group(1)) if m else None

    def stats(self) -> dict:
        status, body, _ = http(self.port, "GET", "/stats")
        assert status == 200, body
        return body

    def settled_stats(self) -> dict:
        """/stats once the tier writer is idle and no KV event batch has
        gone out between two looks."""
        last = [None]

        def quiet():
            s = self.stats()
            before, last[0] = last[0], s
            same = before is not None and s["kv_events"]["seq"] == before["kv_events"]["seq"]
            return s if same and s["tiers"].get("writes_pending", 0) == 0 else None

        return wait_for(quiet, 30, f"{self.name} to settle", interval_s=0.3)


class RedisServer(Process):
    def __init__(self, workdir: Path):
        self.port = free_port()
        data = workdir / "redis"
        data.mkdir()
        super().__init__([tool("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no", "--dir", str(data)], workdir / "redis.log")
        wait_for(self._ping, 20, "redis-server to answer PING")
        self.url = f"redis://127.0.0.1:{self.port}"

    def _ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class HaProxy(Process):
    """haproxy -f CONFIG with the environment the config reads."""

    def __init__(self, workdir: Path, config: Path, env: dict[str, str]):
        exe = tool("haproxy")
        checked = subprocess.run([exe, "-c", "-f", str(config)], env={**os.environ, **env}, capture_output=True,
                                 text=True, timeout=30)
        assert checked.returncode == 0, f"haproxy refused {config}:\n{checked.stdout}{checked.stderr}"
        self._log = open(workdir / "haproxy.log", "w")
        self.log_path = workdir / "haproxy.log"
        self.proc = subprocess.Popen([exe, "-db", "-f", str(config)], env={**os.environ, **env}, stdout=self._log,
                                     stderr=subprocess.STDOUT, text=True)
