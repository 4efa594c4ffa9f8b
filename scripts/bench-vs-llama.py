#!/usr/bin/env python3
"""Side-by-side speed of clmcache and llama.cpp on the same synthetic GGUFs.

Writes the models with `clmcache make-model`, then runs `clmcache bench model`
and (given --llama-bench) llama.cpp's `llama-bench` alternately, round after
round, so that both see the same machine conditions. Prints a Markdown table
with the ratio per row and decode speed as a fraction of the memory-read
bandwidth (`clmcache bench memory`, measured once per round and model; the
row uses the median of its rounds), prefill speed as a fraction of the f32
fma peak (`clmcache bench peak`, also measured every round; prefill FLOPs
counted from the model's shape as `clmcache info` prints it), and writes
every raw result as JSON.

--weights copy,mmap measures both ways of holding the weights, each against
llama.cpp's equivalent: `copy` (clmcache's default, a private huge-page copy)
against `llama-bench -mmp 0`, `mmap` (`clmcache bench model --mmap`) against
`llama-bench -mmp 1`, llama.cpp's default.

  scripts/bench-vs-llama.py --clmcache build/clmcache \
      [--llama-bench PATH/TO/llama.cpp/build/bin/llama-bench] \
      [--models-dir DIR] [--presets 110m,1b] [--types f16,q8_0,q4_k] \
      [--weights copy,mmap] [-t 2] [-p 512] [-n 128] [--rounds 3] [--json-out results.json] \
      [--kernels avx2]

--kernels PATH runs clmcache's bench model and peak on that kernel path
(`clmcache --kernels`), e.g. the AVX2 path on an AVX-512 machine beside a
llama.cpp built for AVX2 only (-DGGML_NATIVE=OFF -DGGML_AVX512=OFF); the fma
peak is then the path's own (ymm on avx2).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def clm_once(args, model, weights):
    j = run_json([args.clmcache, "bench", "model", "-m", model, "-p", str(args.p), "-n", str(args.n),
                  "-t", str(args.t), "-r", "1", "-o", "json", "--kernels", args.kernels]
                 + (["--mmap"] if weights == "mmap" else []))
    return j["pp"]["tokens_per_second"]["median"], j["tg"]["tokens_per_second"]["median"]


def llama_once(args, model, weights):
    rows = run_json([args.llama_bench, "-m", model, "-p", str(args.p), "-n", str(args.n),
                     "-t", str(args.t), "-r", "1", "-o", "json", "-mmp", "1" if weights == "mmap" else "0"])
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] > 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] > 0)
    return pp, tg


def prefill_flops_per_token(args, model):
    """Multiply-adds (x2) of one prompt token's pass through the layers: the
    weight matrices, plus attention over the (p + 1) / 2 earlier positions a
    token of a causal p-token prompt sees on average. The output head runs
    for the last token only and is left out."""
    info = subprocess.run([args.clmcache, "info", model], check=True, capture_output=True, text=True).stdout
    def field(pattern):
        m = re.search(pattern, info)
        if not m:
            sys.exit(f"bench-vs-llama: cannot read /{pattern}/ from clmcache info {model}")
        return int(m.group(1))
    layers = field(r"layers:\s+(\d+)")
    d = field(r"embedding:\s+(\d+)")
    ff = field(r"feed-forward (\d+)")
    heads = field(r"heads:\s+(\d+) query")
    kv_heads = field(r"(\d+) key/value")
    head_dim = field(r"head dim (\d+)")
    q = heads * head_dim
    weights = d * q + 2 * d * kv_heads * head_dim + q * d + 3 * d * ff
    attention = 2 * 2 * q * (args.p + 1) / 2  # q.k and the weighted sum of v
    return layers * (2 * weights + attention)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clmcache", default="build/clmcache")
    ap.add_argument("--llama-bench", default=None)
    ap.add_argument("--models-dir", default="bench-models")
    ap.add_argument("--presets", default="110m,1b")
    ap.add_argument("--types", default="f16,q8_0,q4_k")
    ap.add_argument("--weights", default="copy")
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-p", type=int, default=512)
    ap.add_argument("-n", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--kernels", default="auto")
    args = ap.parse_args()
    modes = args.weights.split(",")
    if not modes or any(m not in ("copy", "mmap") for m in modes):
        ap.error("--weights takes copy, mmap or copy,mmap")

    os.makedirs(args.models_dir, exist_ok=True)
    def bandwidth():
        return run_json([args.clmcache, "bench", "memory", "-t", str(args.t), "--kernels", args.kernels])[
            "read_gb_per_s"]["median"]

    def fma_peak():
        path = os.path.join(args.models_dir, ".bench-peak.json")
        subprocess.run([args.clmcache, "bench", "peak", "-t", str(args.t), "--ms", "200", "--json", path,
                        "--kernels", args.kernels],
                       check=True, capture_output=True)
        with open(path) as f:
            j = json.load(f)
        # Over the threads' CPU time: the cores' own peak, which a loaded
        # machine does not lower; the wall figure shows how much of the cores
        # this run got.
        return j["fma_f32_gflops"], j["fma_f32_gflops_wall"]

    results = {"threads": args.t, "rows": []}
    all_bw = []

    for preset in args.presets.split(","):
        for wtype in args.types.split(","):
            model = os.path.join(args.models_dir, f"synthetic-{preset}-{wtype}.gguf")
            if not os.path.exists(model):
                print(f"writing {model}", file=sys.stderr)
                subprocess.run([args.clmcache, "make-model", "--preset", preset, "--type", wtype, "-o", model],
                               check=True)
            size = os.path.getsize(model)
            flops = prefill_flops_per_token(args, model)
            clm = {m: [] for m in modes}
            llama = {m: [] for m in modes}
            bws = []  # the limit is measured in every round too: this machine's bandwidth drifts
            peaks = []
            for r in range(args.rounds):  # alternate so both sides share the machine's mood
                bws.append(bandwidth())
                peaks.append(fma_peak())
                for m in modes:
                    clm[m].append(clm_once(args, model, m))
                    if args.llama_bench:
                        llama[m].append(llama_once(args, model, m))
                    print(f"{preset} {wtype} {m} round {r + 1}: {bws[-1]:.1f} GB/s, clmcache {clm[m][-1]}" +
                          (f", llama.cpp {llama[m][-1]}" if llama[m] else ""), file=sys.stderr)
            all_bw.extend(bws)
            for m in modes:
                row = {"preset": preset, "type": wtype, "weights": m, "bytes": size,
                       "clmcache_pp": statistics.median(x[0] for x in clm[m]),
                       "clmcache_tg": statistics.median(x[1] for x in clm[m]),
                       "clmcache_runs": clm[m]}
                if llama[m]:
                    row["llama_pp"] = statistics.median(x[0] for x in llama[m])
                    row["llama_tg"] = statistics.median(x[1] for x in llama[m])
                    row["llama_runs"] = llama[m]
                # Decode reads every weight byte once per token.
                bw = statistics.median(bws)
                row["memory_read_gb_per_s"] = bw
                row["memory_read_runs"] = bws
                row["clmcache_tg_bandwidth_fraction"] = row["clmcache_tg"] * size / 1e9 / bw
                # Prefill is compute-bound: its FLOP rate against the f32 fma peak.
                peak = statistics.median(p[0] for p in peaks)
                row["fma_peak_gflops"] = peak
                row["fma_peak_wall_gflops"] = statistics.median(p[1] for p in peaks)
                row["fma_peak_runs"] = peaks
                row["prefill_flops_per_token"] = flops
                row["clmcache_pp_peak_fraction"] = row["clmcache_pp"] * flops / 1e9 / peak
                results["rows"].append(row)

    results["memory_read_gb_per_s"] = statistics.median(all_bw) if all_bw else None
    print(f"| model | type | weights | size | pp{args.p} clmcache | pp{args.p} llama.cpp | ratio | "
          f"pp / fma peak | tg{args.n} clmcache | tg{args.n} llama.cpp | ratio | tg / bandwidth limit |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    for r in results["rows"]:
        lp, lt = r.get("llama_pp"), r.get("llama_tg")
        pp_ratio = r["clmcache_pp"] / lp if lp else None
        tg_ratio = r["clmcache_tg"] / lt if lt else None
        print(f"| {r['preset']} | {r['type']} | {r['weights']} | {r['bytes'] / 2**20:.0f} MiB | {r['clmcache_pp']:.1f} | "
              f"{fmt(lp, '.1f')} | {fmt(pp_ratio, '.2f')} | {r['clmcache_pp_peak_fraction'] * 100:.0f}% | "
              f"{r['clmcache_tg']:.2f} | {fmt(lt, '.2f')} | "
              f"{fmt(tg_ratio, '.2f')} | {r['clmcache_tg_bandwidth_fraction'] * 100:.0f}% |")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
