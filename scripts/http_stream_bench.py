#!/usr/bin/env python3
"""Ordinary streaming traffic against one or more `clmcache serve` builds.

For each binary given, starts it on the model, runs CLIENTS concurrent
streamed completions of up to TOKENS tokens (greedy; some end early at the
model's end token, so throughput is counted from each stream's usage), and
prints generated tokens per second of wall time, time to first token
(median and max, from before the client connects), and how many streams were cut short (finish_reason
"length" before TOKENS tokens: preempted because the KV cache was full).
Rounds alternate between the binaries so that a loaded machine treats them
alike; the last lines give each binary's median over the rounds.

usage: http_stream_bench.py [--rounds N] [--clients N] [--tokens N]
                            [--serve-args "ARGS"] MODEL.gguf BINARY [BINARY...]

--serve-args is passed to every `serve` (after `--port 0 -m MODEL -c 512`),
e.g. "--kv-memory-mb 16 --parallel 32" for a KV cache that holds the whole
burst.
"""
import argparse
import json
import re
import shlex
import socket
import statistics
import threading
import time

from http_client import start_server, stop_server


def stream(port, i, tokens, out):
    body = json.dumps({"prompt": f"Once upon a time {i}", "max_tokens": tokens, "stream": True, "temperature": 0,
                       "stream_options": {"include_usage": True}})
    # Timed from before connecting: a server whose listen backlog overflows
    # makes a client wait for its SYN to be sent again (a second or more).
    t0 = time.time()
    s = socket.create_connection(("127.0.0.1", port))
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
    produced = re.findall(rb'"completion_tokens":(\d+)', data)
    reasons = re.findall(rb'"finish_reason":"(\w+)"', data)
    n = int(produced[-1]) if produced else 0
    cut = bool(reasons) and reasons[-1] == b"length" and n < tokens
    out[i] = (n, first if first is not None else float("nan"), cut)


def one_round(binary, model, args):
    server, port = start_server(binary, model, shlex.split(args.serve_args))
    out = [None] * args.clients
    t0 = time.time()
    threads = [threading.Thread(target=stream, args=(port, i, args.tokens, out)) for i in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    stop_server(server)
    return sum(o[0] for o in out), wall, sorted(o[1] for o in out), sum(o[2] for o in out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("binaries", nargs="+")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--tokens", type=int, default=200)
    p.add_argument("--serve-args", default="", help="extra arguments for every `serve`")
    args = p.parse_args()
    seen = {b: [] for b in args.binaries}
    for r in range(args.rounds):
        for b in args.binaries:
            tokens, wall, ttft, cut = one_round(b, args.model, args)
            p50, worst = ttft[len(ttft) // 2] * 1000, ttft[-1] * 1000
            seen[b].append((tokens / wall, p50, worst))
            print(f"round {r} {b}: {args.clients} streams, {tokens} tokens in {wall:.2f} s = {tokens / wall:.0f} tok/s; "
                  f"ttft p50 {p50:.0f} ms, max {worst:.0f} ms; {cut} cut short", flush=True)
    for b, rows in seen.items():
        med = [statistics.median(col) for col in zip(*rows)]
        print(f"median of {len(rows)} rounds {b}: {med[0]:.0f} tok/s; ttft p50 {med[1]:.0f} ms, max {med[2]:.0f} ms")


if __name__ == "__main__":
    main()
