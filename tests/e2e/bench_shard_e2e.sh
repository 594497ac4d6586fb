#!/usr/bin/env bash
# End-to-end: load from several hosts. N `bench serve --shard I/N` processes with one common --start-at send
# the schedule one client sends, `bench merge` joins them, and the merged report is compared with one client's
# run of the same schedule against the same server:
#   - exact: request count, successful requests, total input and generated tokens, the per-request input and
#     output lengths in dataset order, and the set of request ids (= request indices);
#   - within a tolerance: median TTFT, TPOT and ITL (15% + 3 ms) and the request throughput (5%).
#     Why: the server is servelab's engine twin in real time; both runs send the same requests at the same
#     intended times, so the twin's simulated engine makes the same batches, but each step starts on a
#     wall-clock timer (0.1-1 ms late per step on a loaded 2-core box) and each client's sends and reads are
#     stamped with its own few-ms jitter. Measured (2-core VM): three single-client runs of this schedule
#     gave mean TTFT 131.75 / 145.42 / 142.99 ms (10% apart), mean TPOT 38.56-39.21 ms, request throughput
#     27.06-27.18 req/s; the merged two-shard run fell inside that spread (TTFT 131.86, TPOT 39.20, 27.17).
#     The throughput differs by the difference of the last completion only (5% of a ~2 s run = 100 ms).
#
# Usage: bench_shard_e2e.sh SERVELAB_BINARY
# Inputs (environment, all optional), so that the same check runs under Slurm:
#   SHARDS          number of shards (default 2)
#   SHARD_LAUNCHER  command that starts the N shards, e.g. "srun -N2 --ntasks=2": it runs
#                   `bash -c '... --shard $SLURM_PROCID/$SLURM_NTASKS ...'` once per task. Empty (default):
#                   N background processes on this host.
#   BASE_URL        a running server to use (default: start `servelab sim serve` on a free local port)
#   WORK_DIR        where the shard results go (must be shared by every shard host; default: a temp dir)
#   START_DELAY_S   seconds from now to the common start (default 20)
set -euo pipefail
BIN="$1"
SHARDS="${SHARDS:-2}"
START_DELAY_S="${START_DELAY_S:-20}"
TMP="${WORK_DIR:-$(mktemp -d)}"
mkdir -p "$TMP"
MODEL=deepseek-ai/DeepSeek-V3.2
LAUNCH=(vllm serve "$MODEL" -tp 8 --tokenizer-mode deepseek_v32 --reasoning-parser deepseek_v3)
cleanup() {
  [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null
  wait 2>/dev/null
  [ -z "${WORK_DIR:-}" ] && rm -rf "$TMP"
  return 0
}
trap cleanup EXIT

if [ -z "${BASE_URL:-}" ]; then
  source "$(dirname "$0")/ports.sh"
  PORT=$(free_port)
  cat > "$TMP/calibration.json" <<'CAL'
{"engines": {"vllm": {"kernel_scale": 1, "cpu_step_ms": 2.5, "cpu_request_us": 20, "api_request_ms": 0.05, "first_token_ms": 10}}}
CAL
  "$BIN" sim serve --port "$PORT" --calibration "$TMP/calibration.json" -- "${LAUNCH[@]}" > "$TMP/server.log" 2>&1 &
  SERVER=$!
  BASE_URL="http://127.0.0.1:$PORT"
  wait_up "$PORT" "$SERVER" "$TMP/server.log"
fi

# The schedule: 96 random prompts (300 in / 24 out) at 40 req/s Poisson, seed 11, at most 32 in flight.
WORK=(--backend openai-chat --endpoint /v1/chat/completions --base-url "$BASE_URL" --model "$MODEL"
      --dataset-name random --random-input-len 300 --random-output-len 24 --num-prompts 96 --seed 11
      --request-rate 40 --max-concurrency 32 --request-id-prefix shard-e2e- --percentile-metrics ttft,tpot,itl,e2el
      --metric-percentiles 50,99 --disable-tqdm --ready-check-timeout-sec 0 --no-server-metrics)

# 1. The shards, one common start time.
START=$(( $(date +%s) + START_DELAY_S ))
SHARD_ARGS=("${WORK[@]}" --start-at "$START" --save-result --save-detailed --result-dir "$TMP")
if [ -z "${SHARD_LAUNCHER:-}" ]; then
  pids=()
  for ((i = 0; i < SHARDS; i++)); do
    "$BIN" bench serve "${SHARD_ARGS[@]}" --shard "$i/$SHARDS" --result-filename "shard$i.json" > "$TMP/shard$i.txt" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < SHARDS; i++)); do
    wait "${pids[$i]}" || { echo "FAIL: shard $i"; cat "$TMP/shard$i.txt"; exit 1; }
  done
else
  # shellcheck disable=SC2016,SC2086
  $SHARD_LAUNCHER bash -c 'exec "$0" bench serve "$@" --shard "$SLURM_PROCID/$SLURM_NTASKS" \
    --result-filename "shard$SLURM_PROCID.json" > "'"$TMP"'/shard$SLURM_PROCID.txt" 2>&1' "$BIN" "${SHARD_ARGS[@]}" ||
    { echo "FAIL: shards under $SHARD_LAUNCHER"; cat "$TMP"/shard*.txt; exit 1; }
fi
grep -h "^Clock offset:" "$TMP"/shard*.txt

# 2. Merge.
files=()
for ((i = 0; i < SHARDS; i++)); do files+=("$TMP/shard$i.json"); done
"$BIN" bench merge "${files[@]}" --save-result --save-detailed --result-dir "$TMP" --result-filename merged.json \
  > "$TMP/merged.txt" 2>&1 || { echo "FAIL: bench merge"; cat "$TMP/merged.txt"; exit 1; }

# A merge refuses an incomplete set, naming the missing shard.
set +e
"$BIN" bench merge "$TMP/shard0.json" > "$TMP/refused.txt" 2>&1; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "missing shard" "$TMP/refused.txt" || { echo "FAIL: merge of one shard"; cat "$TMP/refused.txt"; exit 1; }

# 3. One client, the same schedule.
"$BIN" bench serve "${WORK[@]}" --save-result --save-detailed --result-dir "$TMP" --result-filename single.json \
  > "$TMP/single.txt" 2>&1 || { echo "FAIL: single client"; cat "$TMP/single.txt"; exit 1; }

# 4. Compare.
set +e
python3 - "$TMP/merged.json" "$TMP/single.json" "${files[@]}" <<'PY'
import json, sys
merged, single = (json.load(open(p)) for p in sys.argv[1:3])
shards = [json.load(open(p)) for p in sys.argv[3:]]
fail = False
def check(name, a, b, rel=0.0, ab=0.0):
    global fail
    ok = a == b if rel == 0 and ab == 0 else abs(a - b) <= rel * abs(b) + ab
    print(f"{name:<32} merged {a!s:<14.14} single {b!s:<14.14} {'ok' if ok else 'FAIL'}")
    fail |= not ok
for key in ["num_prompts", "completed", "failed", "total_input_tokens", "total_output_tokens"]:
    check(key, merged[key], single[key])
check("input_lens (dataset order)", merged["input_lens"], single["input_lens"])
check("output_lens (dataset order)", merged["output_lens"], single["output_lens"])
ids = sorted(r["request_id"] for s in shards for r in s["servelab"]["shard"]["requests"])
want = sorted(f"shard-e2e-{i}" for i in range(single["num_prompts"]))
check("request ids (union of shards)", ids, want)
check("request ids (no duplicate)", len(ids), len(set(ids)))
# Medians, not means: one scheduling hiccup of a loaded host (a 350 ms P99 TTFT in one run under the sanitizer
# build with other tests running: mean 187.55 vs 134.80 ms, median 143.89 vs 137.18) moves a mean of 96
# requests by tens of percent; the merge itself is exact (tests/bench/merge_test.cc on hand-built shards).
for key in ["median_ttft_ms", "median_tpot_ms", "median_itl_ms"]:
    check(key, round(merged[key], 2), round(single[key], 2), 0.15, 3.0)
check("request_throughput", round(merged["request_throughput"], 2), round(single["request_throughput"], 2), 0.05)
sys.exit(1 if fail else 0)
PY
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
  echo "--- merged ---"; cat "$TMP/merged.txt"; echo "--- single ---"; cat "$TMP/single.txt"; exit 1
fi
grep -E "^(Shard|Clock skew)" "$TMP/merged.txt"
echo "bench shard e2e: ok"
