#!/usr/bin/env python3
"""Splits a perf profile of `clmcache bench dialogue --scaling N` by kind of work.

Reads the text of `perf script -F tid,time,ip,sym` of a recording made with
call graphs (`perf record -T --call-graph dwarf`), keeps the timed part of
part (b) only (from the first sample whose stack is in a scheduler step of
run_sessions but not in make_scheduler_rig or run_to_end, i.e. after the pool set-up and the
system prompt's prefill, to the end), and prints each class's share of the samples of all
threads: matmul, attention, thread hand-offs/waits, sampling, memory,
scheduler bookkeeping, tokenization, row-wise ops, other. With --detail
CLASS it also lists that class's leaf functions.

    perf record -F 250 -T --call-graph dwarf,8192 -o dw.data \\
        ./build/clmcache bench dialogue -t 2 --scaling 32
    perf script -i dw.data -F tid,time,ip,sym > dw.txt
    scripts/perf-dialogue-split.py dw.txt
"""
import argparse
import re
import sys
from collections import Counter


def load(path):
    """The samples of a perf script text: thread, time and stack (leaf first)."""
    samples, cur = [], None
    # A sample's header is "TID SECONDS.MICROS:" (some perf versions indent
    # it); its stack lines start with a hex address and a symbol.
    header = re.compile(r"\s*(\d+)\s+(\d+\.\d+):")
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            m = header.match(line)
            if m:
                cur = {"tid": int(m.group(1)), "t": float(m.group(2)), "stack": []}
                samples.append(cur)
            elif cur is not None:
                parts = line.strip().split(None, 1)
                cur["stack"].append(parts[1] if len(parts) > 1 else parts[0])
    return samples


def has(sample, name):
    return any(name in frame for frame in sample["stack"])


def waiting(stack):
    """A sample is a wait when its innermost frame of clmcache's own code is
    the thread pool's (polling, sleeping or handing out a loop): the kernel
    and libc frames under it (futex, the scheduler) belong to that wait. A
    worker running a chunk has the pool in its stack too, further out, which
    does not make its chunk a wait."""
    for frame in stack:
        if "clm::" in frame:
            return any(k in frame for k in ("ThreadPool::", "AdaptiveSpin", "adaptive_spin"))
    return any(k in " ".join(stack) for k in ("futex", "sched_yield", "pthread_cond"))


def classify(sample):
    stack = sample["stack"]
    leaf = stack[0] if stack else "?"
    whole = " ".join(stack)
    if any(k in leaf for k in ("tile_q", "qt_register_tile", "quantize_q8", "tile_f", "run_tiles", "vec_dot",
                               "dot4_", "dot_q")):
        return "matmul"
    if waiting(stack):
        return "thread hand-off/wait"
    if "matmul" in whole and "memset" not in leaf:
        return "matmul"
    if any(k in whole for k in ("attend_paged", "scores_nq", "pv<", "exp_sum_row", "max_row", "scale_row",
                                "f16_to_f32_row", "arrange_attention")):
        return "attention"
    if any(k in whole for k in ("Sampler", "sample_outputs", "token_logprob", "log_sum_exp", "top_logprobs")):
        return "sampling"
    if any(k in leaf for k in ("memset", "memmove", "memcpy", "clear_page", "malloc", "free")) or \
            any(k in whole for k in ("exc_page_fault", "munmap", "unmap_page_range")):
        return "memory"
    if any(k in whole for k in ("Tokenizer::", "tokenize", "dialogue_tokens")):
        return "tokenization"
    if "Model::forward" not in whole and any(k in whole for k in ("Scheduler", "KvCacheManager", "BlockTable",
                                                                  "PrefixIndex", "build_batch")):
        return "scheduler bookkeeping"
    if any(k in whole for k in ("rmsnorm", "rope", "silu_mul", "write_kv", "add_in_place", "dequantize_row",
                                "f32_to_f16_row", "add_bias")):
        return "row-wise ops"
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("script_text", help="output of perf script -F tid,time,ip,sym")
    ap.add_argument("--detail", help="also list the leaf functions of this class")
    args = ap.parse_args()
    samples = load(args.script_text)
    # The timed loop steps the scheduler itself; the pool's set-up
    # (make_scheduler_rig) and the system prompt's prefill (run_to_end) come
    # before it. (make_rig and run_one are the names before a refactor.)
    setup = ("make_scheduler_rig", "run_to_end", "make_rig", "run_one")
    timed = [s["t"] for s in samples
             if has(s, "run_sessions") and has(s, "Scheduler::step") and not any(has(s, name) for name in setup)]
    if not timed:
        sys.exit("no sample inside run_sessions' timed loop: was it recorded with --call-graph dwarf?")
    start = min(timed)
    window = [s for s in samples if s["t"] >= start]
    counts = Counter(classify(s) for s in window)
    for name, n in counts.most_common():
        print(f"{name:24s} {n:7d} {100.0 * n / len(window):6.1f}%")
    print(f"{'samples':24s} {len(window):7d}")
    if args.detail:
        leaves = Counter(s["stack"][0] if s["stack"] else "?" for s in window if classify(s) == args.detail)
        for leaf, n in leaves.most_common(25):
            print(f"{n:7d} {leaf[:140]}")


if __name__ == "__main__":
    main()
