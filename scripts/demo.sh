#!/usr/bin/env bash
# make demo: the reference study (studies/deepseek-v3.2-h200x8.toml) as one command, on the engine twin,
# with real conversations from $SERVELAB_DATA_DIR (default ../shared/data). Writes out/<study>/report.md,
# report.html, results.sqlite, trials.csv and trials.json, then shows the twin reproducing the study's
# vLLM baseline with `sim run` and the released-measurement check with `sim validate`.
set -euo pipefail
BUILD="${1:-build}"
BIN="$BUILD/servelab"
STUDY="studies/deepseek-v3.2-h200x8.toml"
OUT="out/deepseek-v3.2-h200x8"

echo "== servelab tune $STUDY --target twin (every number below is a twin prediction) =="
rm -rf "$OUT"
"$BIN" tune "$STUDY" --target twin --out "$OUT"

echo
echo "== report: $OUT/report.md (also report.html, results.sqlite, trials.csv, trials.json) =="
# The gain table, the generalization table and the recommendation, as the report has them.
sed -n '/^## Gains along the greedy path/,/^## Best configuration/p' "$OUT/report.md" | sed '$d'
sed -n '/^## Generalization/,/^## Recommended/p' "$OUT/report.md" | sed '$d'
sed -n '/^## Recommended launch command/,/^## Failures/p' "$OUT/report.md" | sed '$d' | grep -v '^| knob\|^|---\|^| [a-z_]*=' || true

echo
echo "== servelab sim run: the study's vLLM TP8 baseline on the sharegpt-1000 workload =="
"$BIN" sim run --scenario sharegpt-1000 -- vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 \
  --tokenizer-mode deepseek_v32 --reasoning-parser deepseek_v3 | head -32

echo
echo "== servelab sim validate: leave-one-study-out over the released corpus (every study predicted by a fit on the others) =="
# The per-study table and the summaries (the full report also lists every point outside its band).
"$BIN" sim validate | awk '/^study/ && !done {p=1} p && !/^  / {print} /^Held out, without/ {p=0; done=1}'
