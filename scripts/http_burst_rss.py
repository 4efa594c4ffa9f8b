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
import sys
import threading
import time

from http_client import exchange, rss_kib, start_server, stop_server

BURSTS = 4
CONCURRENT = 8
KEYS = 100_000
JSON = {"Content-Type": "application/json"}


def main():
    binary, model, extra = sys.argv[1], sys.argv[2], sys.argv[3:]
    server, port = start_server(binary, model, extra)
    body = json.dumps({f"k{i}": i for i in range(KEYS)}).encode()
    time.sleep(0.5)
    before = rss_kib(server.pid)
    peak = before
    for _ in range(BURSTS):
        threads = [threading.Thread(target=exchange, args=(port, "POST", "/tokenize", body, JSON)) for _ in range(CONCURRENT)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        peak = max(peak, rss_kib(server.pid))
    time.sleep(3)
    after = rss_kib(server.pid)
    stop_server(server)
    print(f"body {len(body) >> 10} KiB x {CONCURRENT} concurrent x {BURSTS} bursts: "
          f"RSS before {before >> 10} MiB, after the bursts {peak >> 10} MiB, 3 s later {after >> 10} MiB")


if __name__ == "__main__":
    main()
