#!/usr/bin/env bash
# `make install PREFIX=...` (issue 10 §5): the binary, studies and engine stand-ins land under the prefix, no
# path of the build or source tree is compiled into the binary, and an installed stand-in finds the installed
# binary by itself and serves (/health, /v1/models with the time scale).
# Usage: install_e2e.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD="$1"; SRC="$2"
TMP="$(mktemp -d)"; source "$(dirname "$0")/ports.sh"; PORT=$(free_port); SERVER=""
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
# The installed binary works from any directory: its data (model configs, tokenizers, datasets) is under
# the prefix. A Qwen3 prediction and a Qwen3 study on the twin from /, without SERVELAB_DATA_DIR or a checkout.
[ -f "$TMP/prefix/share/servelab/data/model-configs/qwen3-32b.json" ] || { echo "FAIL: model configs not installed"; exit 1; }
[ -e "$TMP/prefix/share/servelab/data/aic-ops" ] && { echo "FAIL: the operator tables were installed (make deps imports them into the cache)"; exit 1; }
INSTALLED="$TMP/prefix/bin/servelab"
cat > "$TMP/qwen3.toml" <<'TOML'
[study]
name = "qwen3-installed"
target = "twin"
[model]
id = "Qwen/Qwen3-32B"
[hardware]
gpu = "H100"
gpu_count = 2
[[engines]]
name = "vllm"
kind = "vllm"
version = "0.11.0"
command = ["vllm", "serve", "{model}", "--port", "{port}"]
[[knobs]]
name = "tp"
type = "layout"
values = [{tp = 1}, {tp = 2}]
render.vllm = [{flags = ["-tp", "{tp}"]}]
[[scenarios]]
id = "short"
args = ["--dataset-name", "random", "--random-input-len", "1000", "--random-output-len", "100", "--num-prompts", "50"]
TOML
# No Hugging Face cache to find the config in, no Hub: only the installed data can answer.
mkdir -p "$TMP/empty-hub"
bare() { (cd / && env -u SERVELAB_DATA_DIR -u SERVELAB_SOURCE_DIR HF_HUB_CACHE="$TMP/empty-hub" HF_HOME="$TMP/empty-hub" \
                 HF_HUB_OFFLINE=1 "$INSTALLED" "$@"); }
bare sim run --hardware 1xH100 --scenario random-1000in-100out-n50 -- vllm serve Qwen/Qwen3-32B > "$TMP/simrun.log" 2>&1 ||
  { cat "$TMP/simrun.log"; echo "FAIL: installed sim run of Qwen3-32B from /"; exit 1; }
grep -q "Total Token throughput" "$TMP/simrun.log" || { cat "$TMP/simrun.log"; echo "FAIL: no prediction"; exit 1; }
bare tune "$TMP/qwen3.toml" --out "$TMP/qwen3-out" > "$TMP/tune.log" 2>&1 ||
  { cat "$TMP/tune.log"; echo "FAIL: installed tune of a Qwen3 study from /"; exit 1; }
grep -q "data_dir.*$TMP/prefix/share/servelab/data" "$TMP/qwen3-out/report.md" ||
  { grep -n "data_dir" "$TMP/qwen3-out/report.md"; echo "FAIL: the report does not record the installed data directory"; exit 1; }
cd "$TMP"
env -u SERVELAB_BIN PATH="$TMP/prefix/share/servelab/standins/bin:/usr/bin:/bin" SERVELAB_STANDIN_STARTUP_S=0 \
  SERVELAB_STANDIN_TIME_SCALE=4 vllm serve deepseek-ai/DeepSeek-V3.2 --port "$PORT" -tp 8 > server.log 2>&1 &
SERVER=$!
wait_up "$PORT" "$SERVER" "$TMP/server.log" || { echo "FAIL: installed stand-in did not come up"; exit 1; }
curl -sf "http://127.0.0.1:$PORT/v1/models" | grep -q '"time_scale":4' || { cat server.log; echo "FAIL: installed stand-in"; exit 1; }
tr '\0' ' ' < "/proc/$SERVER/cmdline" | grep -q "^$TMP/prefix/bin/servelab sim serve " ||
  { tr '\0' ' ' < "/proc/$SERVER/cmdline"; echo "FAIL: the stand-in did not exec the installed servelab"; exit 1; }
echo "install e2e: ok"
