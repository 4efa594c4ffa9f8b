"""Helpers the HTTP scripts share: start and stop `clmcache serve`, read a
process's resident set, and plain HTTP/1.1 exchanges over raw sockets (raw so
that a script can also misbehave: stop reading, trickle a body, lie about
its length). Python standard library only."""
import re
import socket
import subprocess
import time


def start_server(binary, model, extra=()):
    """Starts `serve` on a free loopback port; returns (process, port)."""
    server = subprocess.Popen([binary, "serve", "--port", "0", "-m", model, "-c", "512", *extra],
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
