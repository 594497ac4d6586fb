#!/usr/bin/env bash
# `make install PREFIX=...` (issue 10 §5): the binary, studies and engine stand-ins land under the prefix, no
# path of the build or source tree is compiled into the binary, and an installed stand-in finds the installed
# binary by itself and serves (/health, /v1/models with the time scale).
# Usage: install_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$1"; SRC="$2"
TMP="$(mktemp -d)"; PORT=$((20000 + RANDOM % 20000)); SERVER=""
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
cmake --install "$BUILD" --prefix "$TMP/prefix" > "$TMP/install.log"
for f in bin/servelab share/servelab/studies/deepseek-v3.2-h200x8.toml share/servelab/standins/bin/vllm \
         share/servelab/standins/bin/trtllm-serve share/servelab/standins/python/sglang/launch_server.py \
         share/doc/servelab/README.md; do
  [ -e "$TMP/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
# Strings of the binary that name the source or build tree, other than source-file names and lambda names
# (the sanitizer build's UBSan/ASan source locations and Boost's assert texts carry those: clang 14 does not
# remap them with -ffile-prefix-map). A data path (studies, stand-ins, ../shared) compiled in is caught.
tree_paths() {
  strings -n 6 "$TMP/prefix/bin/servelab" | grep -F -- "$1" | grep -v -F "(lambda at " |
    awk -v p="$1/" 'index($0, p) == 1 && $0 !~ / / && $0 ~ /\.(cc|h|hpp|ipp|inc)$/ { next } { print }' || true
}
leaked="$(tree_paths "$SRC"; tree_paths "$(cd "$BUILD" && pwd)")"
if [ -n "$leaked" ]; then
  echo "FAIL: the installed binary has the source or build path compiled in:"; echo "$leaked" | head -5; exit 1
fi
cd "$TMP"
env -u SERVELAB_BIN PATH="$TMP/prefix/share/servelab/standins/bin:/usr/bin:/bin" SERVELAB_STANDIN_STARTUP_S=0 \
  SERVELAB_STANDIN_TIME_SCALE=4 vllm serve deepseek-ai/DeepSeek-V3.2 --port "$PORT" -tp 8 > server.log 2>&1 &
SERVER=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" > /dev/null 2>&1 && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$PORT/v1/models" | grep -q '"time_scale":4' || { cat server.log; echo "FAIL: installed stand-in"; exit 1; }
tr '\0' ' ' < "/proc/$SERVER/cmdline" | grep -q "^$TMP/prefix/bin/servelab sim serve " ||
  { tr '\0' ' ' < "/proc/$SERVER/cmdline"; echo "FAIL: the stand-in did not exec the installed servelab"; exit 1; }
echo "install e2e: ok"
