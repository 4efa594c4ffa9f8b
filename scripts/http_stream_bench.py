#!/usr/bin/env python3
"""Ordinary streaming traffic against one or more `clmcache serve` builds.

For each binary given, starts it on the model, runs CLIENTS concurrent
streamed completions of up to TOKENS tokens (greedy; some end early at the
model's end token, so throughput is counted from each stream's usage), and
prints generated tokens per second of wall time, and time to first token
(median and max). Rounds alternate between the binaries so that a loaded
machine treats them alike.

usage: http_stream_bench.py MODEL.gguf BINARY [BINARY...]
"""
import json
import re
import socket
import sys
import threading
import time

from http_client import start_server, stop_server

CLIENTS = 32
TOKENS = 200
ROUNDS = 3


def stream(port, i, out):
    s = socket.create_connection(("127.0.0.1", port))
    body = json.dumps({"prompt": f"Once upon a time {i}", "max_tokens": TOKENS, "stream": True, "temperature": 0,
                       "stream_options": {"include_usage": True}})
    t0 = time.time()
    s.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}".encode())
    data, first = b"", None
    while True:
        got = s.recv(65536)
        if not got:
            break
        if first is None and b'"text"' in got:
            first = time.time() - t0
        data += got
    tokens = re.findall(rb'"completion_tokens":(\d+)', data)
    out[i] = (int(tokens[-1]) if tokens else 0, first if first is not None else float("nan"))


def one_round(binary, model):
    server, port = start_server(binary, model)
    out = [None] * CLIENTS
    t0 = time.time()
    threads = [threading.Thread(target=stream, args=(port, i, out)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    stop_server(server)
    return sum(o[0] for o in out), wall, sorted(o[1] for o in out)


def main():
    model, binaries = sys.argv[1], sys.argv[2:]
    for r in range(ROUNDS):
        for b in binaries:
            tokens, wall, ttft = one_round(b, model)
            print(f"round {r} {b}: {CLIENTS} streams, {tokens} tokens in {wall:.2f} s = {tokens / wall:.0f} tok/s; "
                  f"ttft p50 {ttft[len(ttft) // 2] * 1000:.0f} ms, max {ttft[-1] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
