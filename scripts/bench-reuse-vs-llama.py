#!/usr/bin/env python3
"""llama.cpp's `--cache-reuse` on edited, inserted and deleted prompt tokens.

Measures how much of a cached prompt llama-server reuses, and how long the
prompt takes, when the next request is the same prompt changed in one place.
The workload is the one `clmcache bench reuse` uses, so the two can be put
side by side:

  base    A: a 2000-token prompt (token ids), cached by the request before
  edit    B: A with its first 100 tokens replaced by 100 other tokens
  insert  C: A with 100 new tokens inserted in the middle (at token 1000)
  delete  D: A without its first 100 tokens
  cold    B again, with `cache_prompt: false` (nothing reused: the baseline)

Every measured request meets A, and only A, in the cache of the server's
single slot: by default the slot is restored from a file saved once after a
request for A (`--slot-save-path`, `POST /slots/0?action=restore`; checked
once per server: A sent after a restore computes 1 token), which is much
cheaper than recomputing A; `--prime request` sends the request for A before
each measurement instead. Requests go to the native `/completion` endpoint
with `prompt` as an array of token ids, `n_predict: 1`, `temperature: 0`;
the script reads the response's `timings`
(`prompt_n`: tokens computed, `prompt_ms`: their time, from the start of the
prompt's processing, cache search and KV shifting included, to its first
sampled token) and `tokens_cached`, and times the whole HTTP request itself.
"reused" is the prompt's length minus `prompt_n`.

It starts llama-server twice on loopback, `-c 4096 -t 2 -np 1`, once with
`--cache-reuse 256` and once without (the reference), both alive at once, and
alternates between them and between the cases, round after round, one
request in flight at a time. Prints a Markdown table of medians with min-max
and writes every raw measurement as JSON.

Prompts come from a JSON file {"base": [ids], "edit": [ids], "insert": [ids],
"delete": [ids]}. `--make-prompts FILE` writes one from a seed: uniformly
random ids in [3, vocab) (0-2 are the special tokens of the synthetic llama
vocabulary), which is enough for timing and for exact-match cache reuse,
though it is not text.

  scripts/bench-reuse-vs-llama.py --make-prompts reuse-prompts.json [--seed 1] [--vocab 32000]
  build/clmcache make-model --preset 110m --type q8_0 -o m110m-q8_0.gguf
  nice scripts/bench-reuse-vs-llama.py --server-bin PATH/TO/llama.cpp/build/bin/llama-server \\
      --model m110m-q8_0.gguf --prompts reuse-prompts.json [--rounds 5] [--json-out reuse-llama.json]

`--server-url http://127.0.0.1:PORT` measures an already running llama-server
instead (started by hand with `-np 1`, and `--slot-save-path DIR` unless
`--prime request`); it is labelled with `--label`. "vs cold" in the table is
the cold case's median prompt time over the row's, same server.
"""
import argparse
import json
import os
import random
import statistics
import sys
import shutil
import tempfile
import time
import urllib.error

from http_client import http_json, start_llama_server, stop_llama_server, wait_healthy

CASES = ("cold", "edit", "insert", "delete")
# The prompt each case sends.
CASE_PROMPT = {"cold": "edit", "edit": "edit", "insert": "insert", "delete": "delete"}


# ---------------------------------------------------------------------------
# prompts

def make_prompts(seed, vocab, length, changed, insert_at):
    if vocab <= 4 or length <= changed or not 0 <= insert_at <= length:
        raise ValueError("need vocab > 4, length > changed, 0 <= insert_at <= length")
    rng = random.Random(seed)
    lo = 3  # 0, 1, 2: unknown, BOS, EOS

    def token():
        return rng.randrange(lo, vocab)

    def other_than(t):
        while True:
            u = token()
            if u != t:
                return u

    base = [token() for _ in range(length)]
    edit = [other_than(t) for t in base[:changed]] + base[changed:]
    new = [token() for _ in range(changed)]
    insert = base[:insert_at] + new + base[insert_at:]
    delete = base[changed:]
    return {
        "meta": {"generator": "bench-reuse-vs-llama.py --make-prompts", "seed": seed, "vocab": vocab,
                 "length": length, "changed": changed, "insert_at": insert_at,
                 "ids": f"uniform random in [{lo}, {vocab})"},
        "base": base, "edit": edit, "insert": insert, "delete": delete,
    }


def load_prompts(path):
    with open(path) as f:
        p = json.load(f)
    for key in ("base",) + tuple(sorted(set(CASE_PROMPT.values()))):
        if key not in p or not isinstance(p[key], list) or not p[key] or \
                not all(isinstance(t, int) and t >= 0 for t in p[key]):
            raise ValueError(f"{path}: '{key}' must be a non-empty list of token ids")
    return p


# ---------------------------------------------------------------------------
# llama-server

class Server:
    """A llama-server child on 127.0.0.1, or (proc None) one already running."""

    def __init__(self, label, url, proc=None, log_path=None):
        self.label, self.url, self.proc, self.log_path = label, url, proc, log_path
        self.slot_file = "base-" + "".join(c if c.isalnum() else "-" for c in label) + ".bin"

    @classmethod
    def start(cls, args, label, cache_reuse):
        server_args = ["-c", str(args.ctx), "-t", str(args.threads), "-np", "1"]
        if cache_reuse > 0:
            server_args += ["--cache-reuse", str(cache_reuse)]
        if args.prime == "restore":
            server_args += ["--slot-save-path", args.slot_dir + os.sep]
        proc, url, cmd, log_path = start_llama_server(args.server_bin, args.model, server_args, label,
                                                      args.start_timeout)
        s = cls(label, url, proc, log_path)
        s.command = cmd
        return s

    def wait_ready(self, timeout):
        wait_healthy(self.url, self.proc, timeout, self.label, self.log_path)

    def stop(self):
        stop_llama_server(self.proc)

    def slot_action(self, action, filename):
        return http_json(f"{self.url}/slots/0?action={action}", {"filename": filename}, timeout=120)

    def complete(self, tokens, cache_prompt, timeout):
        body = {"prompt": tokens, "n_predict": 1, "cache_prompt": cache_prompt, "temperature": 0,
                "stream": False}
        t0 = time.perf_counter()
        r = http_json(self.url + "/completion", body, timeout=timeout)
        wall_ms = (time.perf_counter() - t0) * 1e3
        t = r.get("timings", {})
        return {"prompt_tokens": len(tokens), "prompt_n": t.get("prompt_n"), "prompt_ms": t.get("prompt_ms"),
                "tokens_cached": r.get("tokens_cached"), "tokens_evaluated": r.get("tokens_evaluated"),
                "request_ms": wall_ms}


# ---------------------------------------------------------------------------
# measurement

def prime(s, prompts, args):
    """Leave exactly the base prompt A in the slot's cache."""
    if args.prime == "restore":
        r = s.slot_action("restore", s.slot_file)
        if r.get("n_restored") != len(prompts["base"]):
            raise RuntimeError(f"{s.label}: restored {r.get('n_restored')} tokens, expected {len(prompts['base'])}")
        return {"prompt_n": 0, "restore_ms": r.get("timings", {}).get("restore_ms")}
    return s.complete(prompts["base"], True, args.request_timeout)


def measure(servers, prompts, args):
    raw = []
    # One unrecorded pass per server: first-request effects (allocations, page
    # faults); with --prime restore it also saves A's slot and checks that a
    # restored slot serves A from the cache.
    for s in servers:
        a = s.complete(prompts["base"], True, args.request_timeout)
        if args.prime == "restore":
            s.slot_action("save", s.slot_file)
            s.complete(prompts["edit"], False, args.request_timeout)
            prime(s, prompts, args)
            again = s.complete(prompts["base"], True, args.request_timeout)
            if again["prompt_n"] != 1:
                raise RuntimeError(f"{s.label}: A after a restore computed {again['prompt_n']} tokens, expected 1")
            print(f"{s.label}: A cold {a['prompt_ms']:.1f} ms, A from a restored slot {again['prompt_ms']:.1f} ms",
                  file=sys.stderr)
        else:
            s.complete(prompts["edit"], True, args.request_timeout)
    for rnd in range(args.rounds):
        k = rnd % len(args.cases)
        order = args.cases[k:] + args.cases[:k]  # rotate which case goes first
        for case in order:
            for s in (servers if rnd % 2 == 0 else servers[::-1]):
                primed = prime(s, prompts, args)
                time.sleep(args.pause)
                m = s.complete(prompts[CASE_PROMPT[case]], case != "cold", args.request_timeout)
                m.update({"server": s.label, "case": case, "round": rnd, "prime_prompt_n": primed["prompt_n"],
                          "prime_restore_ms": primed.get("restore_ms")})
                raw.append(m)
                print(f"round {rnd} {s.label:>16} {case:>6}: prompt_n {m['prompt_n']:>5} "
                      f"prompt_ms {m['prompt_ms']:9.1f} request_ms {m['request_ms']:9.1f}", file=sys.stderr)
                time.sleep(args.pause)
    return raw


def summary(values):
    v = [x for x in values if x is not None]
    if not v:
        return None
    return {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v)}


def summarize(raw, servers, cases):
    rows = []
    for s in servers:
        for case in cases:
            ms = [m for m in raw if m["server"] == s.label and m["case"] == case]
            if not ms:
                continue
            rows.append({"server": s.label, "case": case, "prompt_tokens": ms[0]["prompt_tokens"],
                         "prompt_n": summary([m["prompt_n"] for m in ms]),
                         "reused": summary([m["prompt_tokens"] - m["prompt_n"] for m in ms]),
                         "tokens_cached": summary([m["tokens_cached"] for m in ms]),
                         "prompt_ms": summary([m["prompt_ms"] for m in ms]),
                         "request_ms": summary([m["request_ms"] for m in ms])})
    return rows


def markdown(rows, rounds):
    def ms(s):
        return f"{s['median']:.1f} ({s['min']:.1f}-{s['max']:.1f})"

    def n(s):
        return f"{s['median']:g}" if s["min"] == s["max"] else f"{s['median']:g} ({s['min']:g}-{s['max']:g})"

    cold = {r["server"]: r["prompt_ms"]["median"] for r in rows if r["case"] == "cold"}
    out = [f"| llama-server | case | prompt tokens | computed | reused | prompt ms, median (min-max) of {rounds} "
           f"| request ms, median (min-max) | vs cold |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        speedup = f"{cold[r['server']] / r['prompt_ms']['median']:.1f}x" if r["server"] in cold and \
            r["case"] != "cold" and r["prompt_ms"]["median"] > 0 else ""
        out.append(f"| {r['server']} | {r['case']} | {r['prompt_tokens']} | {n(r['prompt_n'])} | {n(r['reused'])} "
                   f"| {ms(r['prompt_ms'])} | {ms(r['request_ms'])} | {speedup} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-prompts", metavar="FILE", help="write a prompts JSON from --seed and exit")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=32000, help="token ids are drawn from [3, vocab)")
    ap.add_argument("--length", type=int, default=2000, help="tokens in the base prompt")
    ap.add_argument("--changed", type=int, default=100, help="tokens edited, inserted, deleted")
    ap.add_argument("--insert-at", type=int, default=1000)
    ap.add_argument("--server-bin", help="llama-server to start (twice: with and without --cache-reuse)")
    ap.add_argument("--server-url", help="measure this running llama-server instead of starting one")
    ap.add_argument("--label", default="running server", help="name of --server-url in the table")
    ap.add_argument("--model", help="GGUF for --server-bin")
    ap.add_argument("--prompts", help="prompts JSON")
    ap.add_argument("--cache-reuse", type=int, default=256, help="llama-server --cache-reuse N (min chunk)")
    ap.add_argument("--no-reference", action="store_true", help="do not also run a server without --cache-reuse")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("-c", "--ctx", type=int, default=4096)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prime", choices=("restore", "request"), default="restore",
                    help="how A gets into the cache before each measurement (see above)")
    ap.add_argument("--pause", type=float, default=0.2, help="seconds between requests")
    ap.add_argument("--start-timeout", type=float, default=120)
    ap.add_argument("--request-timeout", type=float, default=300)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    if args.make_prompts:
        p = make_prompts(args.seed, args.vocab, args.length, args.changed, args.insert_at)
        with open(args.make_prompts, "w") as f:
            json.dump(p, f)
        print(f"wrote {args.make_prompts}: base {len(p['base'])}, edit {len(p['edit'])}, "
              f"insert {len(p['insert'])}, delete {len(p['delete'])} tokens", file=sys.stderr)
        if not (args.server_bin or args.server_url):
            return 0
        args.prompts = args.make_prompts
    if not args.prompts:
        ap.error("--prompts FILE (or --make-prompts FILE) is required")
    if bool(args.server_bin) == bool(args.server_url):
        ap.error("give one of --server-bin (with --model) or --server-url")
    if args.server_bin and not args.model:
        ap.error("--server-bin needs --model")
    args.cases = args.cases.split(",")
    if not args.cases or any(c not in CASES for c in args.cases):
        ap.error(f"--cases takes a comma list of {', '.join(CASES)}")
    prompts = load_prompts(args.prompts)
    need = max(len(prompts[k]) for k in ("base", "edit", "insert", "delete")) + 8
    if args.server_bin and need > args.ctx:
        ap.error(f"-c {args.ctx} is too small for {need} tokens")

    servers = []
    args.slot_dir = tempfile.mkdtemp(prefix="llama-slots-") if args.prime == "restore" else None
    try:
        if args.server_url:
            s = Server(args.label, args.server_url.rstrip("/"))
            s.wait_ready(args.start_timeout)
            servers.append(s)
        else:
            servers.append(Server.start(args, f"cache-reuse {args.cache_reuse}", args.cache_reuse))
            if not args.no_reference:
                servers.append(Server.start(args, "no cache-reuse", 0))
        props = {}
        for s in servers:
            try:
                props[s.label] = http_json(s.url + "/props", timeout=10)
            except (urllib.error.URLError, OSError, ValueError):
                props[s.label] = None
        raw = measure(servers, prompts, args)
    finally:
        for s in servers:
            s.stop()
        if args.slot_dir:
            shutil.rmtree(args.slot_dir, ignore_errors=True)

    rows = summarize(raw, servers, args.cases)
    print(markdown(rows, args.rounds))
    if args.json_out:
        result = {"workload": {k: len(prompts[k]) for k in ("base", "edit", "insert", "delete")},
                  "prompts_meta": prompts.get("meta"), "prompts_file": os.path.basename(args.prompts),
                  "ctx": args.ctx, "threads": args.threads, "rounds": args.rounds, "prime": args.prime,
                  "servers": [{"label": s.label, "command": [os.path.basename(a) if a in (args.server_bin, args.model) else a
                                                         for a in s.command] if getattr(s, "command", None) else None,
                               "url": s.url, "props": props.get(s.label)} for s in servers],
                  "rows": rows, "raw": raw}
        with open(args.json_out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {args.json_out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
