#!/usr/bin/env python3
"""The dialogue workload of `clmcache bench dialogue` (b), through HTTP.

N concurrent sessions share one system prompt (BOS and 999 more tokens);
each sends 2 turns of 24 user tokens and takes 16 generated tokens per turn,
greedy, streamed. A session's second prompt is its whole history: the
system prompt, its first user turn, the reply it got (as token ids) and its
second user turn. Before the sessions start, one request makes the system
prompt resident (as the in-process bench does), and is not timed.

The same token ids go to both servers: prompts are token-id arrays (ids
drawn from a seed, uniform in [3, vocabulary), which is enough for timing
though it is not text), replies are taken back as ids (clmcache: `logprobs:
0` with `return_tokens_as_token_ids`; llama-server: `return_tokens`), and
both are asked to ignore the end token (`ignore_eos`) so that every turn
generates exactly its 16 tokens. Only a reply can differ between the
servers (their arithmetic is not bitwise the same), so the second turns'
prompts may differ there.

  clmcache serve  -c N*SLOT -t T --parallel N, POST /v1/completions
  llama-server    -c N*SLOT -t T -np N (continuous batching, its default;
                  f16 K/V, its default), POST /completion, cache_prompt on

SLOT is the tokens one session needs (system prompt and every turn), rounded
up to 32, so llama-server's N slots of -c/N tokens each hold a session and
clmcache's pool holds as many tokens. Both start fresh for every
measurement, on free loopback ports, one at a time, alternating which goes
first round after round (--rounds); every session count is measured in
every round.

Per server and N: generated tokens per second (every generated token over
the wall time from the first session's start to the last one's end), time
to first token p50/p95 over all turns (from before the client connects),
the prompt tokens each server computed (clmcache: the usage's
`reuse.computed`, checked against `/stats`; llama-server: `timings.prompt_n`,
which counts what its slot did not have cached), and failed requests
(connection errors, non-200 answers, replies of the wrong length). Prints a
Markdown table of medians over the rounds and writes every raw measurement
with --json-out.

--in-process also runs `clmcache bench dialogue --scaling` on the same
model and threads once per round (the same workload without HTTP, with the
32-token prefill rate of `bench model -p 32` measured in that run), so the
HTTP figures can be held against it and against the prefill rate.

  build/clmcache make-model --preset 110m --type q8_0 -o m110m-q8_0.gguf
  nice scripts/bench-dialogue-http.py --clmcache-bin build/clmcache \\
      --llama-server-bin LLAMA_CPP_BUILD/bin/llama-server --model m110m-q8_0.gguf \\
      --sessions 1,8,32,64 --rounds 2 -t 2 --in-process --json-out dialogue-http.json

--dashboard-ab measures clmcache twice per round and N, without and with a
client polling GET /dashboard/data every --dashboard-poll-s seconds (as the
dashboard page does, every 1.5 s) while the sessions run, alternating
which goes first, and prints the ratio of generated tokens per second
(polled / not polled), per round and as the median.

--self-test makes a tiny synthetic model, runs 2 sessions over a 64-token
system prompt against clmcache alone, and fails unless every turn streamed
exactly its tokens, the system prompt was reused, the server's counters
agree with the replies' usage and a second run with the dashboard polled
got its every poll answered (a few seconds; CTest runs it).
"""
import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from http_client import http_json, start_llama_server, start_server, stop_llama_server, stop_server

FIRST_ID = 3  # 0-2: unknown, BOS, EOS in the synthetic llama vocabulary
SLOT_ROUNDING = 32


# ---------------------------------------------------------------------------
# workload

class Workload:
    """The token ids every server is sent: one system prompt, and the user
    turns of each session, drawn from one seed."""

    def __init__(self, args, vocab, bos):
        if vocab <= FIRST_ID:
            raise ValueError(f"a vocabulary of {vocab} tokens leaves no ordinary token to draw")
        self.system_tokens, self.turns = args.system_tokens, args.turns
        self.user_tokens, self.reply_tokens = args.user_tokens, args.reply_tokens
        rng = random.Random(args.seed)
        self.system = [bos] + [rng.randrange(FIRST_ID, vocab) for _ in range(args.system_tokens - 1)]
        self.vocab, self.seed = vocab, args.seed

    def user_turn(self, session, turn):
        rng = random.Random(f"{self.seed}/{session}/{turn}")
        return [rng.randrange(FIRST_ID, self.vocab) for _ in range(self.user_tokens)]



def slot_tokens(args):
    """Tokens one session's conversation holds at its end, rounded up."""
    need = args.system_tokens + args.turns * (args.user_tokens + args.reply_tokens) + 1
    return -(-need // SLOT_ROUNDING) * SLOT_ROUNDING

def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    v = sorted(values)
    rank = max(1, -(-len(v) * p // 100))
    return v[min(len(v), int(rank)) - 1]


# ---------------------------------------------------------------------------
# the two servers' streamed completions

def sse_events(response):
    """The JSON payloads of a server-sent event stream, as they arrive."""
    while True:
        line = response.readline()
        if not line:
            return
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        payload = line[len(b"data: "):]
        if payload == b"[DONE]":
            return
        yield json.loads(payload)


class Clmcache:
    kind = "clmcache"

    def __init__(self, args, n):
        self.args, self.n = args, n
        self.ctx = n * slot_tokens(args)
        extra = ["-t", str(args.threads), "--parallel", str(max(n, 1)), *args.clmcache_args]
        self.proc, self.port = start_server(args.clmcache_bin, args.model, extra, ctx=self.ctx)
        self.command = ["clmcache", "serve", "-c", str(self.ctx), *extra]

    def stop(self):
        stop_server(self.proc)

    def computed_counter(self, finished):
        """The scheduler's computed prompt tokens once `finished` requests
        have ended and the step that ended them is over: a request's end is
        counted as it happens, the step's prompt tokens when the step is
        over, so the count is taken when two readings 0.1 s apart agree."""
        deadline = time.monotonic() + 10
        last = None
        while True:
            stats = http_json(f"http://127.0.0.1:{self.port}/stats", timeout=30)["scheduler"]
            now = (stats["requests_finished"], stats["prompt_tokens_computed"])
            if (now == last and now[0] >= finished) or time.monotonic() > deadline:
                return now[1]
            last = now
            time.sleep(0.1)

    def body(self, prompt, tokens):
        return "/v1/completions", {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": True,
                                   "stream_options": {"include_usage": True}, "ignore_eos": True,
                                   "logprobs": 0, "return_tokens_as_token_ids": True}

    @staticmethod
    def read_event(event, turn):
        """Takes the token ids and counters of one event into turn."""
        if event.get("error"):
            raise RuntimeError(f"stream error: {event['error']}")
        usage = event.get("usage")
        if usage:
            turn["prompt_computed"] = usage["prompt_tokens_details"]["reuse"]["computed"]
            turn["completion_tokens"] = usage["completion_tokens"]
        for choice in event.get("choices") or []:
            lp = choice.get("logprobs") or {}
            return [int(t.split(":", 1)[1]) for t in lp.get("tokens") or []]
        return []


class LlamaServer:
    kind = "llama-server"

    def __init__(self, args, n):
        self.args, self.n = args, n
        self.ctx = n * slot_tokens(args)
        server_args = ["-c", str(self.ctx), "-np", str(n), "-t", str(args.llama_threads or args.threads), "-cb",
                       "-ctk", "f16", "-ctv", "f16", *args.llama_server_args]
        self.proc, url, cmd, self.log_path = start_llama_server(args.llama_server_bin, args.model, server_args,
                                                                f"llama-server -np {n}", args.start_timeout)
        self.port = int(url.rsplit(":", 1)[1])
        self.command = ["llama-server", *server_args]

    def stop(self):
        stop_llama_server(self.proc)

    def computed_counter(self, finished):
        return None  # llama-server's metrics are off by default; timings.prompt_n counts per request

    def body(self, prompt, tokens):
        return "/completion", {"prompt": prompt, "n_predict": tokens, "temperature": 0, "stream": True,
                               "ignore_eos": True, "return_tokens": True, "cache_prompt": True}

    @staticmethod
    def read_event(event, turn):
        if "error" in event:
            raise RuntimeError(f"stream error: {event['error']}")
        timings = event.get("timings")
        if event.get("stop") and timings:
            turn["prompt_computed"] = timings["prompt_n"]
            turn["completion_tokens"] = event.get("tokens_predicted")
            turn["timings"] = timings
        return [int(t) for t in event.get("tokens") or []] if not event.get("stop") else []


def stream_turn(server, prompt, tokens, timeout):
    """One streamed completion; returns the turn's record (ids, TTFT, ...)."""
    path, body = server.body(prompt, tokens)
    turn = {"prompt_tokens": len(prompt), "ids": [], "ttft_s": None, "prompt_computed": None}
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {response.read()[:300]!r}")
        for event in sse_events(response):
            ids = server.read_event(event, turn)
            if ids and turn["ttft_s"] is None:
                turn["ttft_s"] = time.perf_counter() - t0
            turn["ids"] += ids
    finally:
        conn.close()
    turn["seconds"] = time.perf_counter() - t0
    if len(turn["ids"]) != tokens:
        raise RuntimeError(f"{len(turn['ids'])} tokens streamed, {tokens} asked for")
    return turn


def run_session(server, workload, i, timeout, start, out):
    history = list(workload.system)
    turns = []
    try:
        start.wait()
        for t in range(workload.turns):
            history += workload.user_turn(i, t)
            turn = stream_turn(server, history, workload.reply_tokens, timeout)
            history += turn["ids"]
            turns.append(turn)
        out[i] = {"turns": turns}
    except (OSError, http.client.HTTPException, RuntimeError, ValueError, threading.BrokenBarrierError) as e:
        out[i] = {"turns": turns, "error": f"{type(e).__name__}: {e}"}


class DashboardPoller:
    """GETs /dashboard/data every `interval` seconds until stopped, as the
    dashboard page does; counts the polls and their failures."""

    def __init__(self, port, interval):
        self.port, self.interval = port, interval
        self.polls, self.failures, self.bytes = 0, 0, 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            try:
                conn.request("GET", "/dashboard/data")
                response = conn.getresponse()
                body = response.read()
                self.polls += 1
                self.bytes += len(body)
                if response.status != 200:
                    self.failures += 1
            except (OSError, http.client.HTTPException):
                self.failures += 1
            finally:
                conn.close()
            self.stopping.wait(self.interval)

    def stop(self):
        self.stopping.set()
        self.thread.join()


def measure(server, workload, n, args, poll_dashboard=False):
    """Primes the system prompt, then runs n sessions at once (with a
    dashboard poller beside them when asked)."""
    prime = stream_turn(server, workload.system, 1, args.request_timeout)
    counter_before = server.computed_counter(1)
    out = [None] * n
    # Every session connects in the same instant, as the in-process bench
    # submits them: a burst the server must accept whole.
    start = threading.Barrier(n + 1)
    threads = [threading.Thread(target=run_session, args=(server, workload, i, args.request_timeout, start, out))
               for i in range(n)]
    for t in threads:
        t.start()
    poller = DashboardPoller(server.port, args.dashboard_poll_s) if poll_dashboard else None
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if poller:
        poller.stop()
    counter_after = server.computed_counter(1 + n * workload.turns)
    turns = [t for s in out for t in s["turns"]]
    errors = [s["error"] for s in out if "error" in s]
    generated = sum(len(t["ids"]) for t in turns)
    ttfts = [t["ttft_s"] for t in turns if t["ttft_s"] is not None]
    computed = [t["prompt_computed"] for t in turns]
    return {
        "server": server.kind, "sessions": n, "command": server.command, "wall_s": wall,
        "generated_tokens": generated, "generated_tokens_per_s": generated / wall,
        "ttft_p50_ms": percentile(ttfts, 50) * 1e3 if ttfts else None,
        "ttft_p95_ms": percentile(ttfts, 95) * 1e3 if ttfts else None,
        "prompt_tokens": sum(t["prompt_tokens"] for t in turns),
        "prompt_tokens_computed": sum(computed) if None not in computed else None,
        "server_counter_computed": None if counter_before is None else counter_after - counter_before,
        "prime_prompt_computed": prime["prompt_computed"],
        "failed_sessions": len(errors), "errors": errors[:5],
        "dashboard_polled": poll_dashboard,
        "dashboard_polls": poller.polls if poller else 0,
        "dashboard_poll_failures": poller.failures if poller else 0,
        "dashboard_bytes": poller.bytes if poller else 0,
        "turns": [{"session": i, "turn": k, "prompt_tokens": t["prompt_tokens"], "ttft_ms": t["ttft_s"] * 1e3,
                   "seconds": t["seconds"], "prompt_computed": t["prompt_computed"], "timings": t.get("timings")}
                  for i, s in enumerate(out) for k, t in enumerate(s["turns"])],
    }


# ---------------------------------------------------------------------------
# rounds, the in-process figures, the table

def in_process(args, counts):
    """`clmcache bench dialogue --scaling` on the same model; its JSON."""
    with tempfile.TemporaryDirectory(prefix="dialogue-http-") as d:
        path = os.path.join(d, "scaling.json")
        cmd = [args.clmcache_bin, "bench", "dialogue", "-m", args.model, "-t", str(args.threads),
               "--scaling", ",".join(map(str, counts)), "--system-tokens", str(args.system_tokens),
               "--turns", str(args.turns), "--user-tokens", str(args.user_tokens),
               "--reply-tokens", str(args.reply_tokens), "--json", path]
        print("in-process: " + " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(path) as f:
            return json.load(f)


def vocabulary(args):
    """The model's vocabulary size and BOS id, asked of a clmcache server."""
    proc, port = start_server(args.clmcache_bin, args.model, ["-t", str(args.threads)], ctx=slot_tokens(args))
    try:
        meta = http_json(f"http://127.0.0.1:{port}/v1/models", timeout=30)["data"][0]["meta"]
        bos = http_json(f"http://127.0.0.1:{port}/tokenize", {"content": "", "add_special": True}, timeout=30)
    finally:
        stop_server(proc)
    return meta["n_vocab"], (bos["tokens"] or [1])[0]


def run_rounds(args, counts, workload):
    # (server, dashboard polled): clmcache twice with --dashboard-ab.
    servers = [(Clmcache, False)] + ([(Clmcache, True)] if args.dashboard_ab else []) + \
        ([(LlamaServer, False)] if args.llama_server_bin else [])
    raw, scaling = [], []
    for r in range(args.rounds):
        order = servers if r % 2 == 0 else servers[::-1]
        if args.in_process:
            scaling.append(in_process(args, counts))
        for n in counts:
            for kind, polled in order:
                if kind is LlamaServer and args.llama_sessions and n not in args.llama_sessions:
                    continue
                server = kind(args, n)
                try:
                    m = measure(server, workload, n, args, poll_dashboard=polled)
                finally:
                    server.stop()
                m["round"] = r
                raw.append(m)
                polled_note = f" (dashboard polled {m['dashboard_polls']}x)" if polled else ""
                print(f"round {r} {m['server']:>12}{polled_note} N={n:<3} {m['generated_tokens_per_s']:8.1f} tok/s, "
                      f"TTFT p50 {m['ttft_p50_ms'] or float('nan'):8.1f} ms p95 {m['ttft_p95_ms'] or float('nan'):8.1f} ms, "
                      f"prompt computed {m['prompt_tokens_computed']}, failed sessions {m['failed_sessions']}",
                      file=sys.stderr, flush=True)
    return raw, scaling


def dashboard_ab(raw, counts):
    """Per N: tokens per second polled / not polled, per round and median."""
    out = []
    for n in counts:
        rounds = sorted({m["round"] for m in raw if m["sessions"] == n})
        ratios = []
        for r in rounds:
            pair = {m["dashboard_polled"]: m for m in raw
                    if m["server"] == "clmcache" and m["sessions"] == n and m["round"] == r}
            if True in pair and False in pair:
                ratios.append(pair[True]["generated_tokens_per_s"] / pair[False]["generated_tokens_per_s"])
        polls = [m for m in raw if m["sessions"] == n and m["dashboard_polled"]]
        out.append({"sessions": n, "ratios": ratios, "median_ratio": statistics.median(ratios) if ratios else None,
                    "polls": sum(m["dashboard_polls"] for m in polls),
                    "poll_failures": sum(m["dashboard_poll_failures"] for m in polls),
                    "mean_answer_bytes": (sum(m["dashboard_bytes"] for m in polls) /
                                          max(1, sum(m["dashboard_polls"] for m in polls)))})
    return out


def dashboard_ab_markdown(rows):
    out = ["| sessions | tok/s polled / not polled, per round | median | polls (failed) | answer bytes |",
           "|---:|---|---:|---:|---:|"]
    for r in rows:
        per_round = ", ".join(f"{x:.3f}" for x in r["ratios"])
        median = "" if r["median_ratio"] is None else f"{r['median_ratio']:.3f}"
        out.append(f"| {r['sessions']} | {per_round} | {median} | {r['polls']} ({r['poll_failures']}) | "
                   f"{r['mean_answer_bytes']:.0f} |")
    return "\n".join(out)


def median_of(rows, key):
    v = [r[key] for r in rows if r[key] is not None]
    return statistics.median(v) if v else None


def summarize(raw, scaling, counts):
    rows = []
    for n in counts:
        row = {"sessions": n}
        for kind in ("clmcache", "llama-server"):
            ms = [m for m in raw if m["server"] == kind and m["sessions"] == n and not m.get("dashboard_polled")]
            if ms:
                row[kind] = {k: median_of(ms, k) for k in ("generated_tokens_per_s", "ttft_p50_ms", "ttft_p95_ms",
                                                           "prompt_tokens_computed")}
                row[kind]["failed_sessions"] = sum(m["failed_sessions"] for m in ms)
                row[kind]["rounds"] = len(ms)
        ins = [next(x for x in s["rows"] if x["sessions"] == n) for s in scaling]
        if ins:
            row["in_process"] = {"generated_tokens_per_s": statistics.median(x["generated_tokens_per_second"] for x in ins),
                                 "prompt_tokens_computed": statistics.median(x["prompt_tokens_computed"] for x in ins)}
        rows.append(row)
    prefill = statistics.median(s["prefill32_tokens_per_second"] for s in scaling) if scaling else None
    return rows, prefill


def markdown(rows, prefill, rounds):
    def f(x, fmt="{:.1f}"):
        return "" if x is None else fmt.format(x)

    with_in_process = any("in_process" in r for r in rows)
    with_llama = any("llama-server" in r for r in rows)
    head = ["sessions"]
    if with_in_process:
        head += ["in-process tok/s", "/ prefill rate"]
    head += ["clmcache tok/s"] + (["/ prefill rate"] if prefill else []) + ["TTFT p50 / p95 (ms)", "prompt computed"]
    if with_llama:
        head += ["llama-server tok/s", "TTFT p50 / p95 (ms)", "prompt computed", "clmcache / llama-server"]
    out = [f"Medians of {rounds} rounds" + (f"; 32-token prefill rate {prefill:.1f} tok/s" if prefill else "") + ".", "",
           "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in rows:
        cells = [str(r["sessions"])]
        if "in_process" in r:
            ip = r["in_process"]["generated_tokens_per_s"]
            cells += [f(ip), f(ip / prefill, "{:.3f}") if prefill else ""]
        elif with_in_process:
            cells += ["", ""]
        for kind in ("clmcache", "llama-server"):
            s = r.get(kind)
            share = kind == "clmcache" and prefill
            if s is None:
                cells += [""] * ((3 if kind == "clmcache" or with_llama else 0) + (1 if share else 0))
                continue
            failed = f" ({s['failed_sessions']} sessions failed)" if s["failed_sessions"] else ""
            cells.append(f(s["generated_tokens_per_s"]) + failed)
            if share:
                cells.append(f(s["generated_tokens_per_s"] / prefill, "{:.3f}"))
            cells += [f"{f(s['ttft_p50_ms'], '{:.0f}')} / {f(s['ttft_p95_ms'], '{:.0f}')}",
                      f(s["prompt_tokens_computed"], "{:.0f}")]
        if "llama-server" in r and "clmcache" in r:
            cells.append(f(r["clmcache"]["generated_tokens_per_s"] / r["llama-server"]["generated_tokens_per_s"],
                           "{:.2f}x"))
        elif with_llama:
            cells.append("")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# self-test

def self_test(args):
    """2 sessions against clmcache on a tiny model; exits 1 on any fault."""
    with tempfile.TemporaryDirectory(prefix="dialogue-http-test-") as d:
        args.model = os.path.join(d, "tiny.gguf")
        subprocess.run([args.clmcache_bin, "make-model", "-o", args.model], check=True, capture_output=True)
        args.system_tokens, args.rounds, args.llama_server_bin, args.in_process = 64, 1, None, False
        args.dashboard_ab = True
        vocab, bos = vocabulary(args)
        workload = Workload(args, vocab, bos)
        raw, _ = run_rounds(args, [2], workload)
    m = raw[0]
    faults = []
    polled = [x for x in raw if x["dashboard_polled"]]
    if len(polled) != 1 or polled[0]["dashboard_polls"] < 1 or polled[0]["dashboard_poll_failures"]:
        faults.append(f"the dashboard poller: {[(x['dashboard_polls'], x['dashboard_poll_failures']) for x in polled]}")
    if m["failed_sessions"]:
        faults.append(f"failed sessions: {m['errors']}")
    want = 2 * args.turns * args.reply_tokens
    if m["generated_tokens"] != want:
        faults.append(f"{m['generated_tokens']} tokens generated, {want} expected")
    if m["prime_prompt_computed"] != args.system_tokens:
        faults.append(f"priming computed {m['prime_prompt_computed']} tokens, not the {args.system_tokens} sent")
    for t in m["turns"]:
        # Every turn finds at least the system prompt's first full block cached.
        if t["prompt_computed"] is None or not 0 < t["prompt_computed"] <= t["prompt_tokens"] - 32:
            faults.append(f"session {t['session']} turn {t['turn']}: computed {t['prompt_computed']} "
                          f"of {t['prompt_tokens']} prompt tokens")
    if m["server_counter_computed"] != m["prompt_tokens_computed"]:
        faults.append(f"/stats counted {m['server_counter_computed']} computed prompt tokens, "
                      f"the replies {m['prompt_tokens_computed']}")
    rows, prefill = summarize(raw, [], [2])
    print(markdown(rows, prefill, 1))
    for fault in faults:
        print("FAIL: " + fault, file=sys.stderr)
    return 1 if faults else 0


def session_counts(text):
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a comma list of session counts")
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("session counts must be positive")
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clmcache-bin", help="the clmcache executable (required but with --table-from)")
    ap.add_argument("--llama-server-bin", help="llama.cpp's llama-server (without it, clmcache alone)")
    ap.add_argument("--model", help="GGUF file both servers load")
    ap.add_argument("--sessions", type=session_counts, default=[1, 8, 32, 64], help="comma list of N")
    ap.add_argument("--llama-sessions", type=session_counts,
                    help="the session counts llama-server is measured at (default: all of --sessions)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--llama-threads", type=int, help="llama-server's -t, when it should differ from -t")
    ap.add_argument("--system-tokens", type=int, default=1000, help="the shared system prompt, BOS included")
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--user-tokens", type=int, default=24)
    ap.add_argument("--reply-tokens", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1, help="seed of the prompts' token ids")
    ap.add_argument("--in-process", action="store_true", help="also run `bench dialogue --scaling` each round")
    ap.add_argument("--clmcache-args", default="", help="extra `serve` arguments (one string)")
    ap.add_argument("--llama-server-args", default="", help="extra llama-server arguments (one string)")
    ap.add_argument("--start-timeout", type=float, default=300)
    ap.add_argument("--request-timeout", type=float, default=600)
    ap.add_argument("--json-out", help="write every raw measurement here")
    ap.add_argument("--dashboard-ab", action="store_true",
                    help="also measure clmcache with GET /dashboard/data polled during the sessions (see above)")
    ap.add_argument("--dashboard-poll-s", type=float, default=1.0, help="seconds between dashboard polls")
    ap.add_argument("--self-test", action="store_true", help="the bounded check CTest runs (see above)")
    ap.add_argument("--table-from", metavar="JSON", help="print the table of an earlier --json-out and exit")
    args = ap.parse_args()
    if args.llama_sessions and not set(args.llama_sessions) <= set(args.sessions):
        ap.error("--llama-sessions must be among --sessions")
    args.clmcache_args = args.clmcache_args.split()
    args.llama_server_args = args.llama_server_args.split()
    if args.dashboard_poll_s <= 0:
        ap.error("--dashboard-poll-s must be positive")
    if args.rounds < 1 or args.system_tokens < 2 or args.turns < 1 or args.user_tokens < 1 or args.reply_tokens < 1:
        ap.error("--rounds, --turns, --user-tokens and --reply-tokens must be positive, --system-tokens at least 2")
    if args.table_from:
        with open(args.table_from) as f:
            earlier = json.load(f)
        print(markdown(earlier["rows"], earlier["prefill32_tokens_per_s"], earlier["rounds"]))
        return 0
    if not args.clmcache_bin:
        ap.error("--clmcache-bin is required")
    if args.self_test:
        return self_test(args)
    if not args.model:
        ap.error("--model is required (or --self-test)")
    for path in (args.clmcache_bin, args.llama_server_bin, args.model):
        if path and not os.path.isfile(path):
            ap.error(f"{path}: no such file")

    vocab, bos = vocabulary(args)
    workload = Workload(args, vocab, bos)
    raw, scaling = run_rounds(args, args.sessions, workload)
    rows, prefill = summarize(raw, scaling, args.sessions)
    print(markdown(rows, prefill, args.rounds))
    ab = dashboard_ab(raw, args.sessions) if args.dashboard_ab else None
    if ab:
        print()
        print(dashboard_ab_markdown(ab))
    if args.json_out:
        result = {"model": os.path.basename(args.model), "threads": args.threads,
                  "llama_threads": args.llama_threads or args.threads, "rounds": args.rounds,
                  "workload": {"system_tokens": args.system_tokens, "turns": args.turns,
                               "user_tokens": args.user_tokens, "reply_tokens": args.reply_tokens,
                               "seed": args.seed, "vocab": vocab, "slot_tokens": slot_tokens(args)},
                  "prefill32_tokens_per_s": prefill, "rows": rows, "in_process": scaling, "raw": raw,
                  "dashboard_ab": ab}
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json_out}", file=sys.stderr)
    failed = sum(m["failed_sessions"] for m in raw)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
