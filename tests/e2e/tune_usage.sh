#!/usr/bin/env bash
# `servelab tune` on the command line: refusals before anything runs, a mistyped bench flag, an unmodelled
# release, and Ctrl-C (split from cli_usage.sh so each stays well inside its time limit under `ctest -j2`).
# Usage: tune_usage.sh SERVELAB_BINARY
set -uo pipefail
BIN="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
# A study on a GPU the twin has no row for: refused before the output directory is made, naming the file.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sed 's/^gpu = .*/gpu = "Z100"/' "$here/../../studies/deepseek-v3.2-h200x8.toml" > "$tmp/z100.toml"
err="$("$BIN" tune "$tmp/z100.toml" --target twin --out "$tmp/z100-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune on an unknown GPU exited $rc: $err"
[[ "$err" == *"z100.toml: target twin: unknown GPU \"Z100\""* ]] || fail "tune on an unknown GPU: $err"
[ ! -e "$tmp/z100-out" ] || fail "tune on an unknown GPU made its output directory"
# A model the twin cannot resolve: the same message and exit status 2 with and without --dry-run (new-user
# trial: the dry run exited 1 through the generic error path).
sed '/^\[model\]/,/^\[hardware\]/ s|^id = .*|id = "foo/bar-7b"|' "$here/../../studies/deepseek-v3.2-h200x8.toml" \
  > "$tmp/nomodel.toml"
for dry in --dry-run ""; do
  err="$("$BIN" tune "$tmp/nomodel.toml" --target twin $dry --out "$tmp/nomodel-out$dry" 2>&1)"; rc=$?
  [ "$rc" -eq 2 ] || fail "tune $dry on an unknown model exited $rc: $err"
  [[ "$err" == *"servelab tune: the engine twin cannot resolve the model foo/bar-7b"* ]] ||
    fail "tune $dry on an unknown model: $err"
done
# A dry run whose every trial is pruned says why and exits 2 (new-user trial: "trials: 1 (1 pruned before
# launch)", exit 0, while the real run ended in "no configuration succeeded").
cat > "$tmp/allpruned.toml" <<'TOML'
[study]
name = "allpruned"
target = "twin"
[model]
id = "Qwen/Qwen3-8B"
[hardware]
gpu = "H100"
gpu_count = 8
[[engines]]
name = "vllm"
kind = "vllm"
version = "0.13.0"
command = ["vllm", "serve", "{model}", "--port", "{port}"]
[[knobs]]
name = "layout"
type = "layout"
values = [{tp = 16}]
render.vllm = [{flags = ["--tensor-parallel-size", "{tp}"]}]
[[scenarios]]
id = "s"
args = ["--dataset-name", "random", "--random-input-len", "128", "--random-output-len", "16", "--num-prompts", "10"]
TOML
out="$("$BIN" tune "$tmp/allpruned.toml" --dry-run --out "$tmp/allpruned-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune --dry-run with every trial pruned exited $rc: $out"
[[ "$out" == *"pruned: baseline: layout tp16 needs 16 GPUs, the node has 8"* ]] || fail "dry run pruned: $out"
[[ "$out" == *"nothing to run: every trial is pruned before launch"* ]] || fail "dry run pruned: $out"
# A scenario's bench arguments bench refuses: the file, line and key, like every study error.
sed 's/"--random-input-len", "128"/"--random-input-lenn", "128"/; s/tp = 16/tp = 1/' "$tmp/allpruned.toml" \
  > "$tmp/badargs.toml"
out="$("$BIN" tune "$tmp/badargs.toml" --out "$tmp/badargs-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune with a mistyped bench flag exited $rc: $out"
[[ "$out" == *"badargs.toml:21: scenarios[0].args: scenario s: bench serve arguments: unrecognized arguments: --random-input-lenn 128 (did you mean --random-input-len?)"* ]] ||
  fail "tune with a mistyped bench flag: $out"
# The same flag mistyped in [bench] common_args: that key and line are named, not the scenario's.
sed 's/tp = 16/tp = 1/' "$tmp/allpruned.toml" > "$tmp/badcommon.toml"
printf '[bench]\ncommon_args = ["--random-input-lenn", "128"]\n' >> "$tmp/badcommon.toml"
out="$("$BIN" tune "$tmp/badcommon.toml" --out "$tmp/badcommon-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune with a mistyped common bench flag exited $rc: $out"
[[ "$out" == *"badcommon.toml:23: bench.common_args: scenario s: bench serve arguments: unrecognized arguments: --random-input-lenn 128 (did you mean --random-input-len?)"* ]] ||
  fail "tune with a mistyped common bench flag: $out"
# A flag the engine's CLI refuses in an engine's base_flags: no configuration of it could launch, a setup
# error before anything runs (new-user trial: the engine was pruned whole and the study ran on without it);
# in one knob value only: a warning naming the knob, the value and the CLI's message.
sed 's/tp = 16/tp = 1/; s/^command = \(.*\)$/command = \1\nbase_flags = ["--enable-prefix-cachingg"]/' "$tmp/allpruned.toml" \
  > "$tmp/badbase.toml"
out="$("$BIN" tune "$tmp/badbase.toml" --dry-run --out "$tmp/badbase-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune with a refused base flag exited $rc: $out"
[[ "$out" == *"engine vllm: its command and base_flags are refused by the engine's own CLI: "*"unrecognized arguments: --enable-prefix-cachingg"* ]] ||
  fail "tune with a refused base flag: $out"
sed 's/^values = \[{tp = 16}\]/values = [{tp = 1}, {tp = 2}]/; s/^render.vllm = .*/render.vllm = [{when = "tp > 1", flags = ["--tensor-parallel-sizee", "{tp}"]}]/' \
  "$tmp/allpruned.toml" > "$tmp/badknob.toml"
out="$("$BIN" tune "$tmp/badknob.toml" --dry-run --out "$tmp/badknob-out" 2>&1)"; rc=$?
[[ "$out" == *"warning: $tmp/badknob.toml:18: knobs[0] (layout).render.vllm: knob layout: 1 value refused by vllm's CLI (layout=tp2: "*"--tensor-parallel-sizee"* ]] ||
  fail "tune with a refused knob value: $out"
# A named release that predates the model's architecture: no configuration of the engine could start.
sed 's/tp = 16/tp = 1/; s|^id = "Qwen/Qwen3-8B"|id = "Qwen/Qwen3.5-9B"|' "$tmp/allpruned.toml" > "$tmp/oldrelease.toml"
out="$("$BIN" tune "$tmp/oldrelease.toml" --dry-run --out "$tmp/oldrelease-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune with a release that predates the model exited $rc: $out"
[[ "$out" == *"engine vllm cannot load the model: vLLM 0.13.0 predates Qwen3_5ForConditionalGeneration"*"no configuration of vllm could start"* ]] ||
  fail "tune with a release that predates the model: $out"
# The same study rendered for Kubernetes: the manifests start real engines, so the refusal warns first (it
# was not checked at all on --target k8s).
out="$("$BIN" tune "$tmp/oldrelease.toml" --target k8s --render "$tmp/oldrelease-k8s" 2>&1)"; rc=$?
[[ "$out" == *"servelab tune: warning: $tmp/oldrelease.toml: engine vllm cannot load the model: vLLM 0.13.0 predates"*"every launch of it is predicted to stop at start-up"* ]] ||
  fail "tune --target k8s with a release that predates the model (exit $rc): $out"
# A rendering condition is checked when the file is read: its file, line and key, and the fields it may use.
sed 's/"tp > 1"/"dpp > 1"/' "$tmp/badknob.toml" > "$tmp/badwhen.toml"
out="$("$BIN" tune "$tmp/badwhen.toml" --dry-run --out "$tmp/badwhen-out" 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "tune with a bad condition exited $rc: $out"
[[ "$out" == *"badwhen.toml:18: knobs[0] (layout).render.vllm[0].when: condition 'dpp > 1' uses unknown field 'dpp'"*"the fields a condition may use: dcp, dp, dp_attention, ep, pp, tp"* ]] ||
  fail "tune with a bad condition: $out"
# A release the twin does not model (here a typo) is said before the study runs (new-user trial: it ran to
# the end with only a warning count in the report); Ctrl-C leaves a partial report, not none or a stale one.
# SIGINT goes once the third trial is printed (not after a fixed delay: CI load once made a 4 s wait both too
# short and too long), and the study has ~110 trials left then. (A background job of a non-interactive
# shell starts with SIGINT ignored; tune still sees it: StopOnSignals blocks SIGINT and waits for it on a
# thread of its own, and a blocked signal is queued whatever its disposition.)
sed 's/version = "0.13.0"/version = "9.9.9"/' "$here/../../studies/deepseek-v3.2-h200x8-slo.toml" > "$tmp/v999.toml"
# tune_stopped SIGNAL OUT LOG: runs the study into OUT, sends SIGNAL once its third trial line is in LOG
# (progress "[3/~N]" or "[3]"), and sets rc to its exit status.
tune_stopped() {
  "$BIN" tune "$tmp/v999.toml" --out "$2" > "$3" 2>&1 &
  local pid=$!
  for _ in $(seq 600); do
    grep -q '^\[3[]/]' "$3" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "-$1" "$pid" 2>/dev/null
  wait "$pid"; rc=$?
}
tune_stopped INT "$tmp/v999-out" "$tmp/v999.log"
out="$(cat "$tmp/v999.log")"
[[ "$out" == *"servelab tune: engine vllm: warning: vLLM 9.9.9 is not a modelled release"* ]] ||
  fail "tune with an unmodelled release said nothing: $out"
[ "$rc" -eq 130 ] || fail "tune stopped by SIGINT after its third trial exited $rc: $out"
[[ "$out" == *"partial report ("*" trials, incomplete): $tmp/v999-out/report.md"* ]] ||
  fail "tune on Ctrl-C wrote no partial report: $out"
grep -q '"kind": "incomplete"' "$tmp/v999-out/summary.json" || fail "partial summary.json: $(cat "$tmp/v999-out/summary.json")"
grep -q 'vLLM 9.9.9 is not a modelled release' "$tmp/v999-out/report.md" || fail "report.md does not name the release"
grep -q '^- Target: twin' "$tmp/v999-out/report.md" || fail "partial report.md names another target"
# SIGTERM stops it the same way, with the shell's status for it: 143 (new-user trial: 130, as for Ctrl-C).
tune_stopped TERM "$tmp/v999-term" "$tmp/v999-term.log"
[ "$rc" -eq 143 ] || fail "tune stopped by SIGTERM exited $rc: $(cat "$tmp/v999-term.log")"
grep -q "partial report (" "$tmp/v999-term.log" || fail "tune on SIGTERM wrote no partial report"
# A version that is no release number cannot be predicted: exit 2 naming the study and the engine (review:
# a bare "'nightly' is not an engine version", exit 1), with --dry-run too.
sed 's/version = "0.13.0"/version = "nightly"/' "$here/../../studies/deepseek-v3.2-h200x8.toml" > "$tmp/nightly.toml"
for dry in "" --dry-run; do
  out="$("$BIN" tune "$tmp/nightly.toml" $dry --out "$tmp/nightly-out$dry" 2>&1)"; rc=$?
  [ "$rc" -eq 2 ] || fail "tune $dry with version nightly exited $rc: $out"
  [[ "$out" == *"nightly.toml: engine vllm: version: "*"the engine twin needs a release number"* ]] ||
    fail "tune $dry with version nightly: $out"
done
echo "tune_usage: ok"
