#!/bin/bash
# Runs `clmcache bench restore` with two builds in turn, ROUNDS times (the
# order swapped every round), so that a before/after comparison on a shared
# machine sees the same load on both sides. Writes OUT/{old,new}-ROUND.json
# and .md, then prints one line per run: warm and cold median TTFT and the
# ratio, for the disk (a) and Redis (b) parts.
# Usage: scripts/bench-restore-ab.sh OLD_CLMCACHE NEW_CLMCACHE OUT_DIR [ROUNDS] [bench restore options...]
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 OLD_CLMCACHE NEW_CLMCACHE OUT_DIR [ROUNDS] [bench restore options...]" >&2
  exit 2
fi
old=$1 new=$2 out=$3
rounds=${4:-3}
shift $(( $# < 4 ? $# : 4 ))
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  order="old new"
  [ $((round % 2)) -eq 0 ] && order="new old"
  for side in $order; do
    bin=$old
    [ "$side" = new ] && bin=$new
    echo "round $round $side: load $(cut -d' ' -f1 /proc/loadavg)" >&2
    "$bin" bench restore -r 3 "$@" --json "$out/$side-$round.json" > "$out/$side-$round.md"
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
print("round side | disk warm / cold ms, ratio | redis warm / cold ms, ratio")
for r in range(1, rounds + 1):
    for side in ("old", "new"):
        d = json.load(open(f"{out}/{side}-{r}.json"))
        cells = []
        for part in ("disk", "redis"):
            if part in d:
                p = d[part]
                cells.append(f"{p['warm_ttft_ms']['median']:.1f} / {p['cold_ttft_ms']['median']:.1f}, {p['ratio']:.3f}")
        print(f"{r} {side} | " + " | ".join(cells))
PY
