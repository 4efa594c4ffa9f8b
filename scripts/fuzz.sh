#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, -DCLMCACHE_FUZZ=ON, clang 16) in
# build-fuzz and runs each for SECONDS (default 60) from its seed corpus,
# fuzz/corpus/<name>/. New inputs go to a scratch corpus, never into the
# committed one; a crash, leak, timeout (an input over 10 s) or an input
# that needs more than 2 GiB leaves its input in the artifacts folder, and
# the script then exits 1 after the other targets have run.
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment: FUZZ_TARGETS (names without fuzz_, default all),
# FUZZ_WORK (scratch corpora and artifacts, default build-fuzz/fuzz-work),
# FUZZ_CXX / FUZZ_CC (default clang++-16 / clang-16), FUZZ_JOBS (build jobs).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "usage: $0 [SECONDS]  (seconds per target, default 60)" >&2
  exit 2
fi
build=build-fuzz
work=${FUZZ_WORK:-$build/fuzz-work}
all_targets="gguf tokenizer_json jinja openai_request split_rules tier_entry redis_reply http_head"
targets=${FUZZ_TARGETS:-$all_targets}

cmake -S . -B "$build" -G Ninja -DCLMCACHE_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug -DBUILD_TESTING=OFF \
  -DCLMCACHE_PYTHON=OFF -DCLMCACHE_UNITY=OFF \
  -DCMAKE_CXX_COMPILER="${FUZZ_CXX:-clang++-16}" -DCMAKE_C_COMPILER="${FUZZ_CC:-clang-16}" >/dev/null
cmake --build "$build" ${FUZZ_JOBS:+-j "$FUZZ_JOBS"} --target $(printf 'fuzz_%s ' $targets)

# Real chat templates are further seeds for the template target.
extra_seeds_jinja=tests/model/chat_templates

failed=()
for name in $targets; do
  corpus=$work/corpus/$name
  artifacts=$work/artifacts/$name
  mkdir -p "$corpus" "$artifacts"
  extra=extra_seeds_$name
  log=$work/$name.log
  echo "== fuzz_$name: ${seconds}s (log: $log)"
  # halt_on_error and a stack trace for UBSan; ASan's leak check stays on.
  if UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$corpus" "fuzz/corpus/$name" ${!extra:-} >"$log" 2>&1; then
    grep -E '^stat::number_of_executed_units' "$log" | sed 's/^stat::/   /' || true
  else
    echo "   FAILED; the input that did it:" "$artifacts"/*
    grep -E '^(==[0-9]+==ERROR|SUMMARY)' "$log" | head -5 | sed 's/^/   /' || true
    failed+=("$name")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing: no crash, leak or timeout in $targets"
