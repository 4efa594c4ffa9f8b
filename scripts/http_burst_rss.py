#!/usr/bin/env python3
"""Measures how much memory `clmcache serve` keeps after an abusive burst.

Starts the server, sends BURSTS bursts of CONCURRENT requests whose JSON
bodies are objects with many keys (a parse allocates many small blocks, the
case that fragments the heap), and prints the server's resident set before,
at the end of the bursts, and after it has been idle for a few seconds.
Extra arguments are passed to `serve` (e.g. --memory-trim-bytes 0).

usage: http_burst_rss.py CLMCACHE_BINARY MODEL.gguf [serve args...]
"""
import json
import re
import socket
import subprocess
import sys
import threading
import time

BURSTS = 4
CONCURRENT = 8
KEYS = 100_000


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def post(port, body):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(f"POST /tokenize HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    while s.recv(65536):
        pass
    s.close()


def main():
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    server = subprocess.Popen([binary, "serve", "--port", "0", "-m", model, "-c", "512"] + extra,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    port = int(re.search(r"127\.0\.0\.1:(\d+)", server.stdout.readline()).group(1))
    body = json.dumps({f"k{i}": i for i in range(KEYS)}).encode()
    time.sleep(0.5)
    before = rss_kib(server.pid)
    peak = before
    for _ in range(BURSTS):
        threads = [threading.Thread(target=post, args=(port, body)) for _ in range(CONCURRENT)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = max(peak, rss_kib(server.pid))
    time.sleep(3)
    after = rss_kib(server.pid)
    server.terminate()
    server.wait(30)
    print(f"body {len(body) >> 10} KiB x {CONCURRENT} concurrent x {BURSTS} bursts: "
          f"RSS before {before >> 10} MiB, after the bursts {peak >> 10} MiB, 3 s later {after >> 10} MiB")


if __name__ == "__main__":
    main()
