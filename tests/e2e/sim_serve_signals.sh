#!/usr/bin/env bash
# `servelab sim serve` and signals / start-up failures (issue 9 section 1): SIGTERM while serving, SIGINT while
# the twin is still loading, a second signal, and a port already in use all end the process cleanly with the
# documented status and message (under the ASan build: without a sanitizer report).
# Usage: sim_serve_signals.sh SERVELAB_BINARY
set -uo pipefail
BIN="$1"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
DATA="${SERVELAB_DATA_DIR:-$SRC/../shared/data}"
TMP="$(mktemp -d)"
source "$(dirname "$0")/ports.sh"
PORT=$(free_port); PORT_C=$(free_port); PORT_D=$(free_port)
SERVE=("$BIN" sim serve --tokenizer "$DATA/gpt2-tokenizer.json")
LAUNCH=(-- vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
clean_log() { ! grep -qE "AddressSanitizer|runtime error|LeakSanitizer|Segmentation" "$1"; }
# Waits up to $2 s for pid $1 to exit; sets st to its status (or "running").
wait_exit() {
  st=running
  for _ in $(seq 1 $(($2 * 10))); do
    if ! kill -0 "$1" 2>/dev/null; then wait "$1"; st=$?; return; fi
    sleep 0.1
  done
}
# Waits until pid $1 has SIGINT blocked (sim serve routes it to its watcher thread from then on).
wait_blocked() {
  for _ in $(seq 1 2000); do  # up to ~10 s: the sanitizer build on a loaded 2-core host starts slowly
    mask=$(awk '/^SigBlk/ {print $2}' "/proc/$1/status" 2>/dev/null)
    [ -n "$mask" ] && [ $((0x$mask & 2)) -ne 0 ] && return 0
    sleep 0.005
  done
  return 1
}

# 1. SIGTERM while serving: stops, prints its summary, exit 0.
"${SERVE[@]}" --port "$PORT" "${LAUNCH[@]}" > "$TMP/a.log" 2>&1 & PIDS+=($!); A=$!
wait_up "$PORT" "$A" "$TMP/a.log" || exit 1
# 2. A second server on the same port fails to start: exit 1 naming the address, no crash.
"${SERVE[@]}" --port "$PORT" "${LAUNCH[@]}" > "$TMP/b.log" 2>&1; B=$?
check "port in use: exit 1" "[ $B -eq 1 ]"
check "port in use: names host:port" "grep -q 'cannot listen on 127.0.0.1:$PORT' '$TMP/b.log'"
check "port in use: no sanitizer report" "clean_log '$TMP/b.log'"
kill -TERM "$A"
wait_exit "$A" 30
check "SIGTERM while serving: exit 0 (got $st)" "[ '$st' = 0 ]"
check "SIGTERM while serving: summary printed" "grep -q 'stopped after' '$TMP/a.log'"
check "SIGTERM while serving: no sanitizer report" "clean_log '$TMP/a.log'"

# 3. SIGINT while the twin and tokenizer load (before listening): it stops as soon as it is up, exit 0.
"${SERVE[@]}" --port "$PORT_C" "${LAUNCH[@]}" > "$TMP/c.log" 2>&1 & PIDS+=($!); C=$!
wait_blocked "$C"
kill -INT "$C"
wait_exit "$C" 30
check "SIGINT during start-up: exit 0 (got $st)" "[ '$st' = 0 ]"
check "SIGINT during start-up: no sanitizer report" "clean_log '$TMP/c.log'"

# 4. Two signals 0.15 s apart: the second exits at once with 130; two within 50 ms are one (timeout(1)).

"${SERVE[@]}" --port "$PORT_D" "${LAUNCH[@]}" > "$TMP/d.log" 2>&1 & PIDS+=($!); D=$!
wait_blocked "$D"
kill -INT "$D"; sleep 0.15; kill -INT "$D"  # a person's second Ctrl-C (one within 50 ms is the same signal)
wait_exit "$D" 30
check "two signals: exit 130 (got $st)" "[ '$st' = 130 ]"

[ "$fail" -eq 0 ] || { for f in a b c d; do echo "--- $f.log"; cat "$TMP/$f.log"; done; exit 1; }
echo "sim serve signals: ok"
