#!/usr/bin/env bash
# `make demo` (scripts/demo.sh), the README's first command, end to end on the twin: every step exits 0 and
# prints what it is for (a SIGPIPE once stopped it after `sim run`, unseen: no test ran it). Outputs go to a
# temporary directory (SERVELAB_DEMO_OUT), not the checkout's out/.
# Usage: demo_usage.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC="$1"; BUILD="$2"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
out="$(cd "$SRC" && SERVELAB_DEMO_OUT="$tmp" ./scripts/demo.sh "$BUILD" 2>&1)"; rc=$?
[ "$rc" -eq 0 ] || fail "demo exited $rc: $(printf '%s' "$out" | tail -20)"
for want in "recommended: " "== report: $tmp/deepseek-v3.2-h200x8/report.md" "## SLO search" \
            "## Cost per 1M tokens" "Prediction of the servelab engine twin" "Total Token throughput (tok/s):" \
            "ALL (held out)" "Summary (held out): "; do
  [[ "$out" == *"$want"* ]] || fail "demo output lacks \"$want\": $(printf '%s' "$out" | tail -20)"
done
for f in report.md report.html results.sqlite trials.csv trials.json summary.json; do
  [ -s "$tmp/deepseek-v3.2-h200x8/$f" ] || fail "demo wrote no $f"
done
[ -s "$tmp/deepseek-v3.2-h200x8-slo/report.md" ] || fail "demo wrote no SLO study report"
echo "demo_usage: ok"
