#!/usr/bin/env python3
"""A bounded soak of `clmcache serve`: ordinary traffic with abuse mixed in.

Starts the server on a free loopback port and runs CLIENTS client threads for
DURATION seconds. Each repeatedly picks an action at random (weights below):
streamed and non-streamed chat and completions; a stream abandoned after its
first event; a stream that is never read; a body trickled in slowly; and bad
requests that must be refused with their own 4xx: malformed JSON, JSON nested
too deep, a body over --max-body-bytes (declared or chunked), a wrong API
key, prompts over the context (under the byte bound, so the tokenizer must
stop, and over it). Every second it samples the server's RSS
(/proc/PID/status) and the latency of GET /health.

At the end it checks, and exits 1 when any check fails:
- no 5xx other than 503 (the intended refusals: connection limit, draining),
  and every answer is one its action allows (an ordinary request may be 429);
- every /health probe answered 200;
- RSS flat after warm-up: the median of the last quarter's samples is within
  RSS_GROWTH (10 %) or RSS_SLACK_MIB (4 MiB), whichever is larger, of the
  second quarter's median (not checked with --no-rss-check, for sanitizer
  builds: their allocator keeps freed memory in quarantine, so RSS grows by
  design);
- /stats back to idle within IDLE_WAIT_S of the last client finishing: no
  running or queued sequence, no request in flight, no KV block in use
  (blocks held only by the prefix cache are counted as cached, not used).
It prints a Markdown summary, and with --json PATH writes the figures there.

usage: http_soak.py CLMCACHE_BINARY MODEL.gguf [--clients N] [--duration S]
                    [--json PATH] [--no-key] [--no-rss-check] [--seed N]
                    [-- serve args...]
"""
import argparse
import json
import random
import socket
import statistics
import sys
import threading
import time

from http_client import exchange, read_all, request_head, rss_kib, start_server, status_of, stop_server, timed_get

API_KEY = "soak-key"
MAX_BODY_BYTES = 1 << 20
RSS_GROWTH = 0.10
RSS_SLACK_MIB = 4
IDLE_WAIT_S = 15
STORY = "Once upon a time there was a little girl named Lily who loved to play in the park with her dog"

# action -> (weight, statuses it may end with; None = the client never reads one)
ACTIONS = {
    "chat_stream": (20, {200, 429}),
    "chat_whole": (10, {200, 429}),
    "completion_stream": (12, {200, 429}),
    "completion_whole": (12, {200, 429}),
    "disconnect_mid_stream": (8, {200, 429}),
    "never_read": (3, None),
    "slow_sender": (4, {200, 429}),
    "malformed_json": (4, {400}),
    "deep_json": (3, {400}),
    "oversize_declared": (2, {413}),
    "oversize_chunked": (2, {413}),
    "bad_auth": (3, {401}),
    "over_context_tokens": (3, {400}),
    "over_context_bytes": (2, {400}),
}


class Soak:
    def __init__(self, port, key, duration, rng_seed):
        self.port = port
        self.key = key
        self.deadline = time.monotonic() + duration
        self.seed = rng_seed
        self.lock = threading.Lock()
        self.outcomes = {}      # (action, status) -> count
        self.violations = []    # strings
        self.completion_tokens = 0

    def headers(self, key=None):
        h = {"Content-Type": "application/json"}
        key = self.key if key is None else key
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def record(self, action, status, tokens=0):
        with self.lock:
            self.outcomes[(action, status)] = self.outcomes.get((action, status), 0) + 1
            self.completion_tokens += tokens
            allowed = ACTIONS[action][1]
            # A string status is a failure the client saw (no answer, a broken stream).
            failed = isinstance(status, str)
            bad_5xx = isinstance(status, int) and status >= 500 and status != 503
            if failed or bad_5xx or (allowed is not None and status not in allowed and status != 503):
                if len(self.violations) < 50:
                    self.violations.append(f"{action}: status {status}")

    def generation_body(self, rng, chat, stream, max_tokens):
        body = {"max_tokens": max_tokens, "stream": stream, "temperature": rng.choice([0, 0.8])}
        text = f"{STORY} {rng.randrange(1000)}"
        if chat:
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
        if stream:
            body["stream_options"] = {"include_usage": True}
        return json.dumps(body).encode()

    def post(self, path, body, key=None):
        return exchange(self.port, "POST", path, body, self.headers(key))

    def generate(self, rng, action, chat, stream):
        path = "/v1/chat/completions" if chat else "/v1/completions"
        status, data = self.post(path, self.generation_body(rng, chat, stream, rng.randrange(8, 120)))
        tokens = 0
        if status == 200:
            usage = data.rfind(b'"completion_tokens":')
            if usage >= 0:
                tokens = int(data[usage + 20:].split(b",")[0].split(b"}")[0])
            if stream and b"data: [DONE]" not in data:
                self.record(action, "unterminated stream")
                return
        self.record(action, status, tokens)

    def disconnect_mid_stream(self, rng):
        chat = rng.random() < 0.5
        body = self.generation_body(rng, chat, True, 200)
        path = "/v1/chat/completions" if chat else "/v1/completions"
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            s.sendall(request_head(self.port, "POST", path, len(body), self.headers()) + body)
            first = s.recv(4096)
        self.record("disconnect_mid_stream", status_of(first))

    def never_read(self, rng):
        body = self.generation_body(rng, False, True, 400)
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(request_head(self.port, "POST", "/v1/completions", len(body), self.headers()) + body)
            time.sleep(min(4.0, max(0.5, self.deadline - time.monotonic())))
        self.record("never_read", None)

    def slow_sender(self, rng):
        body = self.generation_body(rng, True, False, 16)
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            s.sendall(request_head(self.port, "POST", "/v1/chat/completions", len(body), self.headers()))
            pieces = 10
            step = -(-len(body) // pieces)
            for i in range(0, len(body), step):
                s.sendall(body[i:i + step])
                time.sleep(0.15)
            data = read_all(s)
        self.record("slow_sender", status_of(data))

    def oversize_chunked(self):
        chunk = b"x" * 65536
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            head = request_head(self.port, "POST", "/v1/completions", None,
                                {**self.headers(), "Transfer-Encoding": "chunked"})
            s.sendall(head)
            try:
                for _ in range(2 * MAX_BODY_BYTES // len(chunk)):
                    s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                s.sendall(b"0\r\n\r\n")
            except OSError:
                pass  # the server answered and closed while we were still sending
            try:
                data = read_all(s)
            except OSError:
                data = b""
        self.record("oversize_chunked", status_of(data))

    def run_action(self, rng, action):
        if action in ("chat_stream", "chat_whole", "completion_stream", "completion_whole"):
            self.generate(rng, action, action.startswith("chat"), action.endswith("stream"))
        elif action == "disconnect_mid_stream":
            self.disconnect_mid_stream(rng)
        elif action == "never_read":
            self.never_read(rng)
        elif action == "slow_sender":
            self.slow_sender(rng)
        elif action == "malformed_json":
            self.record(action, self.post("/v1/completions", b'{"prompt": "Once", "max_tokens": ')[0])
        elif action == "deep_json":
            depth = rng.randrange(1000, 100000)
            body = b'{"prompt": "Once", "x": ' + b"[" * depth + b"]" * depth + b"}"
            self.record(action, self.post("/v1/completions", body)[0])
        elif action == "oversize_declared":
            with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
                s.sendall(request_head(self.port, "POST", "/v1/completions", MAX_BODY_BYTES + 1, self.headers()))
                self.record(action, status_of(read_all(s)))
        elif action == "oversize_chunked":
            self.oversize_chunked()
        elif action == "bad_auth":
            self.record(action, self.post("/v1/completions", b'{"prompt": "Once"}', key="wrong-key")[0])
        elif action == "over_context_tokens":
            # A few KiB of words: under the byte bound (n_ctx x the longest
            # token), far over the context in tokens.
            words = " ".join(rng.choice(["the", "dog", "ran", "big", "sun", "Lily"]) for _ in range(1200))
            self.record(action, self.post("/v1/completions", json.dumps({"prompt": words}).encode())[0])
        elif action == "over_context_bytes":
            words = " ".join(["park"] * 50000)
            body = json.dumps({"messages": [{"role": "user", "content": words}]}).encode()
            self.record(action, self.post("/v1/chat/completions", body)[0])

    def client(self, index):
        rng = random.Random(self.seed * 1000 + index)
        names = [a for a in ACTIONS if self.key or a != "bad_auth"]
        weights = [ACTIONS[a][0] for a in names]
        while time.monotonic() < self.deadline:
            action = rng.choices(names, weights)[0]
            try:
                self.run_action(rng, action)
            except Exception as e:  # a client must not die silently: its failure is counted
                self.record(action, f"client error ({type(e).__name__})")


def sample(server_pid, port, stop, rss, health):
    while not stop.is_set():
        t0 = time.monotonic()
        rss.append(rss_kib(server_pid))
        health.append(timed_get(port, "/health"))
        stop.wait(max(0.0, 1.0 - (time.monotonic() - t0)))


def stats(port, key):
    status, data = exchange(port, "GET", "/stats", headers={"Authorization": f"Bearer {key}"} if key else None)
    if status != 200:
        return None
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def is_idle(s):
    return (s["scheduler"]["running"] == 0 and s["scheduler"]["queued"] == 0 and s["server"]["in_flight"] == 0 and
            s["cache"]["blocks_used"] == 0)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("model")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--duration", type=float, default=600)
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--no-key", action="store_true", help="serve without --api-key (no bad-auth clients)")
    ap.add_argument("--no-rss-check", action="store_true",
                    help="report RSS but do not check it (sanitizer builds: freed memory stays in quarantine)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("serve_args", nargs="*", help="extra `serve` arguments (after --)")
    args = ap.parse_args()

    key = None if args.no_key else API_KEY
    extra = ["--max-body-bytes", str(MAX_BODY_BYTES)] + (["--api-key", key] if key else []) + args.serve_args
    server, port = start_server(args.binary, args.model, extra)
    soak = Soak(port, key, args.duration, args.seed)
    before = stats(port, key)
    stop, rss, health = threading.Event(), [], []
    sampler = threading.Thread(target=sample, args=(server.pid, port, stop, rss, health))
    sampler.start()
    t0 = time.monotonic()
    clients = [threading.Thread(target=soak.client, args=(i,)) for i in range(args.clients)]
    for c in clients:
        c.start()
    for c in clients:
        c.join()
    wall = time.monotonic() - t0
    stop.set()
    sampler.join()

    idle, after, waited = False, None, 0.0
    t_idle = time.monotonic()
    while waited < IDLE_WAIT_S:
        after = stats(port, key)
        if after and is_idle(after):
            idle = True
            break
        time.sleep(0.25)
        waited = time.monotonic() - t_idle
    exit_code = stop_server(server)

    checks = []
    checks.append(("no 5xx other than 503, every status one its action allows", not soak.violations,
                   "; ".join(soak.violations[:5]) or "none"))
    unanswered = sum(1 for status, _ in health if status != 200)
    checks.append(("every /health probe answered 200", unanswered == 0, f"{unanswered} of {len(health)} failed"))
    quarter = max(1, len(rss) // 4)
    q2 = statistics.median(rss[quarter:2 * quarter]) if len(rss) >= 4 else float("nan")
    q4 = statistics.median(rss[-quarter:]) if len(rss) >= 4 else float("nan")
    bound = max(q2 * (1 + RSS_GROWTH), q2 + RSS_SLACK_MIB * 1024)
    rss_flat = len(rss) >= 4 and q4 <= bound
    checks.append((f"RSS flat: last-quarter median within {RSS_GROWTH:.0%} or {RSS_SLACK_MIB} MiB of the "
                   "second quarter's" + (" (not checked: --no-rss-check)" if args.no_rss_check else ""),
                   rss_flat or args.no_rss_check, f"{q2 / 1024:.1f} MiB -> {q4 / 1024:.1f} MiB"))
    checks.append((f"/stats idle within {IDLE_WAIT_S} s of the last client", idle,
                   json.dumps({k: after["scheduler"][k] for k in ("running", "queued")} |
                              {"in_flight": after["server"]["in_flight"],
                               "blocks_used": after["cache"]["blocks_used"],
                               "blocks_cached": after["cache"]["blocks_cached"]}) if after else "no /stats"))
    checks.append(("server exited 0 on SIGTERM", exit_code == 0, f"exit {exit_code}"))

    latencies = [t for status, t in health if status == 200]
    generated = (after["scheduler"]["generated_tokens"] - before["scheduler"]["generated_tokens"]) if after else 0
    by_action = {}
    for (action, status), n in sorted(soak.outcomes.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        by_action.setdefault(action, {})[str(status)] = n
    figures = {
        "clients": args.clients, "duration_s": round(wall, 1), "model": args.model.rsplit("/", 1)[-1],
        "requests": sum(soak.outcomes.values()), "outcomes": by_action,
        "health_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "health_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "health_max_ms": round(max(latencies) * 1000, 1) if latencies else None,
        "health_probes": len(health),
        "rss_mib": {"first": round(rss[0] / 1024, 1) if rss else None,
                    "q2_median": round(q2 / 1024, 1), "q4_median": round(q4 / 1024, 1),
                    "max": round(max(rss) / 1024, 1) if rss else None,
                    "last": round(rss[-1] / 1024, 1) if rss else None},
        "generated_tokens": generated, "tokens_per_s": round(generated / wall, 1),
        "completion_tokens_delivered": soak.completion_tokens,
        "cancelled_by_cause": after["scheduler"]["cancelled_by_cause"] if after else None,
        "checks": [{"check": c, "ok": ok, "detail": d} for c, ok, d in checks],
    }

    print(f"## Soak: {args.clients} clients x {wall:.0f} s on {figures['model']}\n")
    print("| Action | Outcomes (status: count) |\n|---|---|")
    for action, counts in by_action.items():
        print(f"| {action} | " + ", ".join(f"{s}: {n}" for s, n in counts.items()) + " |")
    print(f"\nRequests: {figures['requests']}; generated tokens {generated} "
          f"({figures['tokens_per_s']} tok/s), {soak.completion_tokens} delivered in completed answers.  ")
    print(f"/health: p50 {figures['health_p50_ms']} ms, p99 {figures['health_p99_ms']} ms, "
          f"max {figures['health_max_ms']} ms over {len(health)} probes.  ")
    r = figures["rss_mib"]
    print(f"RSS: {r['first']} MiB at start, second-quarter median {r['q2_median']}, last-quarter median "
          f"{r['q4_median']}, max {r['max']}, last {r['last']} MiB.\n")
    print("| Check | Result | Detail |\n|---|---|---|")
    for c, ok, d in checks:
        print(f"| {c} | {'pass' if ok else 'FAIL'} | {d} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
