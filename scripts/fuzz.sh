#!/usr/bin/env bash
# Runs every libFuzzer target of fuzz/ for a bounded time: scripts/fuzz.sh BUILD_DIR [SECONDS_EACH]
# (default 60; FUZZ_JOBS targets at a time, default 2). BUILD_DIR is a SERVELAB_FUZZ=ON build (`make fuzz`
# configures one). Seeds: fuzz/corpus/<target>/ (checked in); the growing corpus lives in
# BUILD_DIR/fuzz/corpus/<target>/, crash inputs in BUILD_DIR/fuzz/artifacts/<target>/. Exits 1 when a
# target found a crash, a leak or a timeout (its input is named in the log) — turn it into a test.
# Longer runs: scripts/fuzz.sh build-asan 3600.
set -euo pipefail
BUILD="${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS_EACH]}"
SECONDS_EACH="${2:-60}"
JOBS="${FUZZ_JOBS:-2}"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
# FUZZ_TARGETS (space-separated) runs a subset (`make fuzz-input`, CI: the Makefile's ASAN_INPUT_FUZZERS).
ALL_TARGETS="sse_fuzz http_response_fuzz simserve_request_fuzz tokenizer_json_fuzz study_toml_fuzz dataset_fuzz"
ALL_TARGETS+=" result_files_fuzz hub_response_fuzz"
read -r -a TARGETS <<< "${FUZZ_TARGETS:-$ALL_TARGETS}"

run_one() {
  local t="$1" bin="$BUILD/fuzz/$1" corpus="$BUILD/fuzz/corpus/$1" art="$BUILD/fuzz/artifacts/$1/"
  [ -x "$bin" ] || { echo "fuzz: $bin missing (configure with -DSERVELAB_FUZZ=ON)"; return 1; }
  mkdir -p "$corpus" "$art"
  cp -n "$SRC/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  # -rss_limit_mb: the loaders hold a whole input; 2 GiB leaves the 24 GiB machine to the rest of CI.
  if "$bin" "$corpus" -max_total_time="$SECONDS_EACH" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
       -print_final_stats=1 -artifact_prefix="$art" > "$BUILD/fuzz/$t.log" 2>&1; then
    echo "fuzz: $t: $(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$BUILD/fuzz/$t.log" | awk '{print $2}') runs in ${SECONDS_EACH} s, no finding"
  else
    echo "fuzz: $t: FINDING (log: $BUILD/fuzz/$t.log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$BUILD/fuzz/$t.log" | head -5
    return 1
  fi
}
export -f run_one
export BUILD SECONDS_EACH SRC
printf '%s\n' "${TARGETS[@]}" | xargs -P "$JOBS" -I{} bash -c 'run_one {}'
