#!/usr/bin/env bash
# make demo-local: the reference study through `servelab tune --target local`, the path a GPU node takes,
# on the engine stand-ins (tools/standins: `vllm`, `python3 -m sglang.launch_server`, `trtllm-serve` that
# serve through the engine twin), time-scaled, in a few minutes on a laptop. Every number is the twin's
# prediction served over HTTP and measured by bench serve; the report says so.
#   DEMO_TIME_SCALE (default 20), DEMO_PROMPTS_SCALE (default 0.05): time scale of the stand-ins and the
#   share of each scenario's prompts (the full study at scale 1 takes ~16 engine-hours of start-ups and runs).
set -euo pipefail
BUILD="${1:-build}"
BIN="$(cd "$BUILD" && pwd)/servelab"
SRC="$(cd "$(dirname "$0")/.." && pwd)"
RUN="$SRC/out/demo-local"
STUDY="$SRC/studies/deepseek-v3.2-h200x8.toml"
mkdir -p "$RUN/data"
cd "$RUN"
# The 640 MB ShareGPT_V3 file is used when `make deps` could download it; otherwise a ShareGPT-form file
# built from the real conversations in the data directory stands in for it (scripts/gen_large_sharegpt.py).
CACHE="${SERVELAB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/servelab}"
SHAREGPT=ShareGPT_V3_unfiltered_cleaned_split.json
if [ -s "$CACHE/data/$SHAREGPT" ]; then
  ln -sf "$CACHE/data/$SHAREGPT" "data/$SHAREGPT"
  echo "== ShareGPT: $CACHE/data/$SHAREGPT"
elif [ ! -s "data/$SHAREGPT" ]; then
  python3 "$SRC/scripts/gen_large_sharegpt.py" --data "${SERVELAB_DATA_DIR:-$SRC/../shared/data}" --size-mb 8 \
    --out "data/$SHAREGPT"
fi
# SGLang's chat template for DeepSeek-V3.2 goes here on a real node; the sglang stand-in does not read it.
[ -e tool_chat_template_deepseekv32.jinja ] ||
  echo "{# stand-in placeholder: on a GPU node put SGLang's tool_chat_template_deepseekv32.jinja here #}" \
    > tool_chat_template_deepseekv32.jinja
export SERVELAB_DATA_DIR="$RUN/data"
export PATH="$SRC/tools/standins/bin:$PATH" PYTHONPATH="$SRC/tools/standins/python${PYTHONPATH:+:$PYTHONPATH}"
export SERVELAB_BIN="$BIN" SERVELAB_STANDIN_TIME_SCALE="${DEMO_TIME_SCALE:-20}" SERVELAB_STANDIN_STARTUP_S=0.5
ARGS=("$STUDY" --target local --prompts-scale "${DEMO_PROMPTS_SCALE:-0.05}" --out "$RUN/study")

echo "== servelab tune --dry-run (the plan and what pre-flight finds)"
"$BIN" tune "${ARGS[@]}" --dry-run
echo
echo "== servelab tune --target local on the stand-ins (time scale $SERVELAB_STANDIN_TIME_SCALE)"
"$BIN" tune "${ARGS[@]}" --fresh
echo
echo "== report: $RUN/study/report.md"
sed -n '/^> \*\*/p' "$RUN/study/report.md"
sed -n '/^## Gains along the greedy path/,/^## Best configuration/p' "$RUN/study/report.md" | sed '$d'
