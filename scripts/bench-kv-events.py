#!/usr/bin/env python3
"""What publishing KV events costs decode throughput, with a subscriber
attached: one `clmcache serve` run with or without --kv-events-endpoint.

8 clients each send 8 completions of a distinct ~300-token prompt with 64
generated tokens (greedy, ignore_eos), on a pool of 1024 tokens, so the RAM
pool stores and evicts blocks all the time (BlockStored and BlockRemoved
events in every batch). With --events a subscriber in this process decodes
every batch (msgpack) as a router would and checks the sequence numbers.
Prints generated tokens per second over the workload, and, with events,
what the subscriber got. Compare the two modes side by side, alternating
them run by run on one machine (A B A B ...), e.g.:

  for i in 1 2 3 4 5; do
    /usr/bin/python3 scripts/bench-kv-events.py --events
    /usr/bin/python3 scripts/bench-kv-events.py --no-events
  done
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def post(port: int, body: dict) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--events", action="store_true", help="publish KV events, a subscriber attached")
    mode.add_argument("--no-events", action="store_true", help="no KV events")
    ap.add_argument("--clmcache-bin", default=str(ROOT / "build" / "clmcache"))
    ap.add_argument("--model", default=str(ROOT.parent / "shared" / "models" / "stories260K.gguf"))
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=8, help="per client")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    cmd = [args.clmcache_bin, "serve", "--port", "0", "-m", args.model, "-c", "1024", "-t", str(args.threads),
           "--parallel", str(args.clients)]
    if args.events:
        cmd += ["--kv-events-endpoint", "tcp://127.0.0.1:*"]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in server.stdout:
            m = re.search(r"on http://[^:]+:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "the server did not start"
        stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30).read())

        got = {"batches": 0, "events": 0, "gaps": 0}
        stop = threading.Event()
        subscriber = None
        if args.events:
            import msgpack
            import zmq

            ctx = zmq.Context()
            sub = ctx.socket(zmq.SUB)
            sub.setsockopt_string(zmq.SUBSCRIBE, "")
            sub.connect(stats["kv_events"]["endpoint"])
            time.sleep(0.3)  # let the subscription reach the publisher

            def listen():
                last = None
                while not stop.is_set() or sub.poll(200):
                    if not sub.poll(100):
                        continue
                    _, seq, payload = sub.recv_multipart()
                    n = int.from_bytes(seq, "big")
                    if last is not None and n != last + 1:
                        got["gaps"] += 1
                    last = n
                    batch = msgpack.unpackb(payload, raw=False)
                    got["batches"] += 1
                    got["events"] += len(batch[1])

            subscriber = threading.Thread(target=listen)
            subscriber.start()

        generated = [0]
        lock = threading.Lock()

        def client(k: int):
            for i in range(args.requests):
                words = " ".join(f"story {k} part {i} line {j}: the cat sat on the mat." for j in range(30))
                r = post(port, {"prompt": words, "max_tokens": args.max_tokens, "temperature": 0,
                                "ignore_eos": True})
                with lock:
                    generated[0] += r["usage"]["completion_tokens"]

        start = time.monotonic()
        clients = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
        for t in clients:
            t.start()
        for t in clients:
            t.join()
        elapsed = time.monotonic() - start
        if subscriber:
            time.sleep(0.3)
            stop.set()
            subscriber.join()
        final = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=30).read())
        print(f"mode {'events' if args.events else 'no-events'}: {generated[0]} tokens in {elapsed:.3f} s, "
              f"{generated[0] / elapsed:.1f} tokens/s")
        if args.events:
            kv = final["kv_events"]
            print(f"subscriber: {got['batches']} batches, {got['events']} events, {got['gaps']} gaps; server: "
                  f"{kv['batches_published']} batches, {kv['events_dropped']} dropped, stored {kv['blocks_stored']}, "
                  f"removed {kv['blocks_removed']}")
        return 0
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    raise SystemExit(main())
