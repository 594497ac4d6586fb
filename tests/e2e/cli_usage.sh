#!/usr/bin/env bash
# The top-level command line (issue 30 item 5): an unknown subcommand is named with the valid ones, and the
# help texts do not tie the twin to one model and GPU.
# Usage: cli_usage.sh SERVELAB_BINARY
set -uo pipefail
BIN="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }

err="$("$BIN" bogus 2>&1 >/dev/null)"; rc=$?
[ "$rc" -ne 0 ] || fail "servelab bogus exited 0"
[[ "$err" == *"unknown subcommand 'bogus'"* ]] || fail "servelab bogus: $err"
for sub in bench sim tune tokenize; do
  [[ "$err" == *"$sub"* ]] || fail "servelab bogus does not list '$sub': $err"
done
[[ "$err" != *"A subcommand is required"* ]] || fail "servelab bogus: $err"
# A known subcommand still parses; no argument at all still asks for one.
"$BIN" --version >/dev/null || fail "servelab --version"
err="$("$BIN" 2>&1)"; [[ "$err" == *"subcommand"* ]] || fail "servelab alone: $err"

for args in "--help" "sim --help"; do
  out="$("$BIN" $args 2>&1)"
  [[ "$out" != *"DeepSeek-V3.2 on H200s"* ]] || fail "servelab $args ties the twin to DeepSeek-V3.2 on H200s"
done
[[ "$("$BIN" --help 2>&1)" == *"any supported model and GPU"* ]] || fail "servelab --help"
echo "cli_usage: ok"
