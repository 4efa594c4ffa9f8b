"""Helpers the HTTP scripts share: start and stop `clmcache serve`, read a
process's resident set, and plain HTTP/1.1 exchanges over raw sockets (raw so
that a script can also misbehave: stop reading, trickle a body, lie about
its length); JSON requests and the start of a llama.cpp `llama-server` for
the scripts that compare against it. Python standard library only."""
import json
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def start_server(binary, model, extra=(), ctx=512):
    """Starts `serve` on a free loopback port; returns (process, port)."""
    server = subprocess.Popen([binary, "serve", "--port", "0", "-m", model, "-c", str(ctx), *extra],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = server.stdout.readline()
    found = re.search(r"127\.0\.0\.1:(\d+)", line)
    if not found:
        server.kill()
        raise RuntimeError(f"serve did not start: {line.strip()}")
    return server, int(found.group(1))


def stop_server(server, timeout=30):
    """SIGTERM, then the exit status (the server drains first)."""
    server.terminate()
    return server.wait(timeout)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def request_head(port, method, path, length=None, headers=None):
    """The bytes of a request head (Connection: close, Host the loopback address)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    for name, value in (headers or {}).items():
        lines.append(f"{name}: {value}")
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_all(sock):
    data = b""
    while True:
        got = sock.recv(65536)
        if not got:
            return data
        data += got


def status_of(response):
    """The status code of a raw response, or None when there was none."""
    found = re.match(rb"HTTP/1\.[01] (\d{3})", response)
    return int(found.group(1)) if found else None


def exchange(port, method, path, body=b"", headers=None, timeout=60):
    """One request on a fresh connection; returns (status or None, raw response)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request_head(port, method, path, len(body) if body or method == "POST" else None, headers) + body)
        data = read_all(s)
    return status_of(data), data


def timed_get(port, path, timeout=5):
    """(status or None, seconds) of a GET; a timeout or reset gives None."""
    t0 = time.monotonic()
    try:
        status, _ = exchange(port, "GET", path, timeout=timeout)
    except OSError:
        status = None
    return status, time.monotonic() - t0


def http_json(url, body=None, timeout=600):
    """GET (no body) or POST a JSON body; returns the decoded JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    """A loopback port free now (llama-server cannot pick one itself)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, proc, timeout, label, log_path):
    """Polls GET /health until it answers {"status": "ok"}; raises if the
    process exits first or the time runs out (llama-server answers 503
    while it loads the model)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{label}: exited with {proc.returncode}; see {log_path}")
        try:
            if http_json(url + "/health", timeout=5).get("status") == "ok":
                return
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"{label}: not ready after {timeout} s; see {log_path}")


def start_llama_server(binary, model, args, label, timeout=120):
    """Starts llama-server on a free loopback port with these arguments after
    `-m MODEL`; returns (process, url, command, log path) once it is ready.
    Its output goes to a log file, kept for when something goes wrong."""
    port = free_port()
    cmd = [binary, "-m", model, *args, "--host", "127.0.0.1", "--port", str(port)]
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
    print(f"starting {label}: {' '.join(cmd)} (log {log.name})", file=sys.stderr)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc, timeout, label, log.name)
    except RuntimeError:
        stop_llama_server(proc)
        raise
    return proc, url, cmd, log.name


def stop_llama_server(proc):
    """SIGINT (llama-server's clean stop), then SIGKILL after 10 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
