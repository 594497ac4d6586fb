#!/usr/bin/env bash
# make demo: the reference study (studies/deepseek-v3.2-h200x8.toml) as one command, on the engine twin,
# with real conversations from $SERVELAB_DATA_DIR (default ../shared/data). Writes out/<study>/report.md,
# report.html, results.sqlite, trials.csv, trials.json and summary.json, then shows the twin reproducing the study's
# vLLM baseline with `sim run` and the released-measurement check with `sim validate`. Then a load study
# (studies/deepseek-v3.2-h200x8-slo.toml): load curves, the SLO search, the Pareto front and the cost per 1M tokens.
set -euo pipefail
BUILD="${1:-build}"
BIN="$BUILD/servelab"
OUT_ROOT="${SERVELAB_DEMO_OUT:-out}"  # where the studies' outputs go (ctest demo_usage: a temporary directory)
STUDY="studies/deepseek-v3.2-h200x8.toml"
OUT="$OUT_ROOT/deepseek-v3.2-h200x8"

echo "== servelab tune $STUDY --target twin (every number below is a twin prediction) =="
rm -rf "$OUT"
"$BIN" tune "$STUDY" --target twin --out "$OUT"

echo
echo "== report: $OUT/report.md (also report.html, results.sqlite, trials.csv, trials.json, summary.json) =="
# The gain table, the generalization table and the recommendation, as the report has them.
sed -n '/^## Gains along the greedy path/,/^## Best configuration/p' "$OUT/report.md" | sed '$d'
sed -n '/^## Generalization/,/^## Recommended/p' "$OUT/report.md" | sed '$d'
sed -n '/^## Recommended launch command/,/^## Failures/p' "$OUT/report.md" | sed '$d' | grep -v '^| knob\|^|---\|^| [a-z_]*=' || true

echo
SLO_STUDY="studies/deepseek-v3.2-h200x8-slo.toml"
SLO_OUT="$OUT_ROOT/deepseek-v3.2-h200x8-slo"
echo "== servelab tune $SLO_STUDY --target twin: load curves, SLO search, Pareto front, cost (predicted) =="
rm -rf "$SLO_OUT"
"$BIN" tune "$SLO_STUDY" --target twin --out "$SLO_OUT" | tail -3
echo
echo "== report: $SLO_OUT/report.md — SLO search, Pareto front (front points), objectives, cost =="
sed -n '/^## SLO search/,/^Runs of each search/p' "$SLO_OUT/report.md" | sed '$d'
sed -n '/^## Pareto front/,/^## Objectives/p' "$SLO_OUT/report.md" | sed '$d' | grep -v '| *|$' || true
sed -n '/^## Objectives/,/^## Cost per 1M tokens/p' "$SLO_OUT/report.md" | grep '^### \|^Best' || true
sed -n '/^## Cost per 1M tokens/,/^## Failures/p' "$SLO_OUT/report.md" | sed '$d'
echo "(load curves of every configuration: the \"Load curves\" section of $SLO_OUT/report.md)"

echo
echo "== servelab sim run: the study's vLLM TP8 baseline on the sharegpt-1000 workload =="
"$BIN" sim run --scenario sharegpt-1000 -- vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 \
  --tokenizer-mode deepseek_v32 --reasoning-parser deepseek_v3 | sed -n '1,32p'  # reads it all: no SIGPIPE

echo
echo "== servelab sim validate: leave-one-study-out over the released corpus (every study predicted by a fit on the others) =="
# The per-study table and the summaries (the full report also lists every point outside its band).
"$BIN" sim validate | awk '/^study/ && !done {p=1} p && !/^  / {print} /^Held out, without/ {p=0; done=1}'
