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
# --op-data (issue 29): no flag is `default`, the measured tables; `none` is the roofline, and so is
# `default` without the make-deps store, with a note on stderr (not an error); a named directory that is no
# store is an error.
# Under PP the twin view counts pipeline ticks, and micro-batches beside the CUDA graphs they ran on (both
# per batch, not a micro-batch count against a tick count), and each micro-batch's stage time once; its
# times add up with the pipeline bubble. Without PP: engine steps, no bubble row.
pp="$("$BIN" sim run --hardware 2xH100 --scenario random-128in-16out-n20 -- vllm serve Qwen/Qwen3-8B -pp 2 2>&1)" ||
  fail "sim run -pp 2: $pp"
for label in "Pipeline ticks:" "Micro-batches run / on full CUDA graphs:" "Mean stage time per micro-batch (ms):" \
             "Stage time, prefill micro-batches (s):" "Pipeline fill, drain and stage waits (s):"; do
  [[ "$pp" == *"$label"* ]] || fail "sim run -pp 2 lacks '$label'"
done
[[ "$pp" != *"Engine steps / on full CUDA graphs:"* ]] || fail "sim run -pp 2 calls its ticks engine steps"
# --explain states the KV-cache dtype the launch resolved to (the engine's flag, else its default).
fp8="$("$BIN" sim run --explain --hardware 1xH100 --scenario random-128in-16out-n20 -- vllm serve Qwen/Qwen3-8B --kv-cache-dtype fp8 2>&1)" ||
  fail "sim run --kv-cache-dtype fp8: $fp8"
[[ "$fp8" == *"resolved: KV cache dtype fp8"* ]] || fail "sim run --explain does not state the fp8 KV cache"
run=(sim run --hardware 1xH100 --scenario random-128in-16out-n20 -- vllm serve Qwen/Qwen3-8B)
tput() { grep "Total Token throughput" <<<"$1"; }
plain="$("$BIN" "${run[@]}" 2>&1)" || fail "sim run: $plain"
[[ "$plain" == *"Engine steps / on full CUDA graphs:"* && "$plain" != *"Pipeline fill"* ]] ||
  fail "sim run without PP: $plain"
# A list flag right before `--` (bench's --goodput takes several KEY:VALUE pairs): the launch after the
# separator is still the engine's (new-user trial: CLI11 let `--` end the list and eat it, and -tp 2 was
# refused as sim run's own unknown argument).
slo="$("$BIN" sim run --hardware 2xH100 --scenario random-128in-16out-n20 --goodput ttft:500 tpot:25 -- \
  vllm serve Qwen/Qwen3-8B -tp 2 2>&1)" || fail "sim run --goodput a b -- launch: $slo"
[[ "$slo" == *"Request goodput (req/s):"* ]] || fail "sim run --goodput gives no goodput: $slo"
dflt="$("$BIN" sim run --op-data default "${run[@]:2}" 2>&1)" || fail "sim run --op-data default: $dflt"
[ -n "$(tput "$plain")" ] && [ "$(tput "$plain")" == "$(tput "$dflt")" ] || fail "--op-data default differs from no flag"
none="$("$BIN" sim run --op-data none "${run[@]:2}" 2>&1)" || fail "sim run --op-data none: $none"
missing="$(SERVELAB_OPS_DIR=/nonexistent/servelab-ops "$BIN" sim run "${run[@]:2}" 2>&1)" ||
  fail "sim run without a store failed: $missing"
[[ "$missing" == *"no measured operator store at /nonexistent/servelab-ops"*"roofline"* ]] ||
  fail "sim run without a store says nothing: $missing"
[ -n "$(tput "$none")" ] && [ "$(tput "$none")" == "$(tput "$missing")" ] || fail "without a store is not the roofline"
if "$BIN" sim run --op-data /nonexistent/servelab-ops "${run[@]:2}" >/dev/null 2>&1; then
  fail "--op-data with a missing directory succeeded"
fi
# Every request longer than --max-model-len fails: a warning with the count and the engine's reason, no band.
long="$("$BIN" sim run --hardware 1xH100 --scenario random-4096in-16out-n5 -- vllm serve Qwen/Qwen3-8B \
  --max-model-len 2048 2>&1)" || fail "sim run with failing requests: $long"
[[ "$long" == *"Warning: 5 of 5 requests fail (no error band"*", e.g.: "*"maximum context length is 2048"* ]] ||
  fail "failed requests not warned about: $long"
[[ "$long" != *"Error band"* ]] || fail "an error band printed for failed requests: $long"
# An engine argument error says which release's flags the launch was checked against (the image's tag here).
err="$("$BIN" sim run --scenario random-128in-16out-n5 -- docker run --gpus all vllm/vllm-openai:v0.11.0 \
  --model Qwen/Qwen3-8B --bogus-flag 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "an engine argument error exited $rc: $err"
[[ "$err" == *"unrecognized arguments: --bogus-flag"*"checked against vLLM 0.11.0"* ]] || fail "release not named: $err"
# No release parses it: the error of the release the model is predicted on (Qwen3.5: 0.17.1, which knows
# --language-model-only), not the default's.
err="$("$BIN" sim run --scenario random-128in-16out-n5 -- vllm serve Qwen/Qwen3.5-9B --language-model-only \
  --bogus 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "an engine argument error exited $rc: $err"
[[ "$err" == *"unrecognized arguments: --bogus"$'\n'*"checked against vLLM 0.17.1"* ]] || fail "not the predicted release's error: $err"
# What the launch says about the release, on stderr before the prediction: a tag that names no release (and
# the release predicted instead), --engine-version over a tag's release.
note="$("$BIN" sim run --scenario random-128in-16out-n5 -- docker run vllm/vllm-openai:latest \
  --model Qwen/Qwen3-8B 2>&1 >/dev/null)" || fail "sim run with :latest: $note"
[[ "$note" == *"servelab: note: the image tag 'latest' (vllm/vllm-openai:latest) moves with the engine's releases: vLLM 0.24.0, the newest modelled release, is predicted"* ]] ||
  fail "a tag naming no release is not noted: $note"
note="$("$BIN" sim run --engine-version 0.11.0 --scenario random-128in-16out-n5 -- docker run \
  vllm/vllm-openai:v0.13.0 --model Qwen/Qwen3-8B 2>&1 >/dev/null)" || fail "sim run --engine-version: $note"
[[ "$note" == *"servelab: note: --engine-version 0.11.0 wins over the release the image tag names, 0.13.0"* ]] ||
  fail "--engine-version over a tag is not noted: $note"
# `docker run --entrypoint vllm IMAGE serve ...`: the entrypoint is the program, the image the release; the
# launch is echoed as given (--model and -e kept, nothing repeated).
launch="docker run --gpus all -e VLLM_USE_DEEP_GEMM=0 --entrypoint vllm vllm/vllm-openai:v0.11.0 serve Qwen/Qwen3-8B"
out="$("$BIN" sim run --scenario random-128in-16out-n5 -- $launch 2>&1)" || fail "sim run --entrypoint: $out"
[[ "$out" == *"Launch:   $launch"$'\n'* ]] || fail "the --entrypoint launch is not echoed as given: $out"
[[ "$out" == *"Engine vllm 0.11.0;"* ]] || fail "the --entrypoint launch's image tag is not its release: $out"
# --save-result: bench serve's JSON, marked as the twin's, with the launch and the release predicted.
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$BIN" sim run --save-result --result-dir "$tmp" --result-filename r.json "${run[@]:2}" >/dev/null 2>&1 ||
  fail "sim run --save-result"
saved="$(cat "$tmp/r.json")"
[[ "$saved" == *'"servelab_engine_twin_prediction": true'* || "$saved" == *'"servelab_engine_twin_prediction":true'* ]] ||
  fail "saved result is not marked as a prediction: $saved"
[[ "$saved" =~ \"servelab_engine_version\":\ ?\"0\.[0-9]+\.[0-9]+ ]] || fail "saved result lacks the release: $saved"
# Without --result-filename the twin's file is named as the twin's (twin-<backend>-...), never as bench serve's
# file of the same run, which it would replace.
mkdir "$tmp/default"
"$BIN" sim run --save-result --result-dir "$tmp/default" "${run[@]:2}" >/dev/null 2>&1 || fail "sim run --save-result (default name)"
ls "$tmp/default"/twin-openai-*qps*.json >/dev/null 2>&1 || fail "the twin's default result name: $(ls "$tmp/default")"
# --scenario names the whole workload: a dataset flag beside it is refused (exit 2), naming it, not ignored.
err="$("$BIN" sim run --hardware 1xH100 --scenario random-1000in-100out-n20 --num-prompts 5 --random-input-len 50 \
  --request-rate 4 -- vllm serve Qwen/Qwen3-8B 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "--scenario with dataset flags exited $rc: $err"
[[ "$err" == *"--scenario random-1000in-100out-n20 sets the workload"*"so --num-prompts, --random-input-len would be ignored"* ]] ||
  fail "--scenario with dataset flags does not name them: $err"
[[ "$err" != *"--request-rate"* ]] || fail "an arrival flag is refused beside --scenario: $err"
# A run ends when the client has its last token: no TTFT beyond the benchmark's duration.
"$BIN" sim run --save-result --save-detailed --result-dir "$tmp" --result-filename one.json --hardware 1xH100 \
  --scenario random-1in-2out-n1 -- vllm serve Qwen/Qwen3-8B >/dev/null 2>&1 || fail "sim run of one request"
python3 - "$tmp/one.json" <<'PY' || fail "a TTFT or E2EL beyond the duration, or a 0 ms ITL"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ttfts"][0] <= d["duration"], (d["ttfts"], d["duration"])
assert all(x > 0 for x in d["itls"][0]), d["itls"]
PY
# A GPU the twin does not model is refused before the workload is drawn (no tokenizer needed for that).
out="$("$BIN" sim run --hardware 1xMI300X -- vllm serve Qwen/Qwen3-8B 2>&1)"; rc=$?
[ "$rc" -eq 1 ] || fail "sim run on MI300X exited $rc: $out"
[[ "$out" == "Predicted failure: the twin does not model MI300X: "* ]] || fail "sim run on MI300X: $out"
# So is a launch that runs out of memory: its dataset is never drawn (here its tokenizer does not exist).
out="$("$BIN" sim run --hardware 1xH100 --dataset-name random --tokenizer /nonexistent/tokenizer.json \
  -- vllm serve Qwen/Qwen3-235B-A22B-Instruct-2507 2>&1)"; rc=$?
[ "$rc" -eq 1 ] || fail "sim run of an OOM launch exited $rc: $out"
[[ "$out" == "Predicted failure: "*"out of memory"* ]] || fail "sim run of an OOM launch: $out"
# A mistyped flag of sim run / sim serve before the `--` is named with the closest one (CLI11 alone blamed
# the launch words after the `--`: "The following arguments were not expected: Qwen/Qwen3-8B serve vllm").
err="$("$BIN" sim run --max-concurency 32 --scenario random-128in-16out-n5 -- vllm serve Qwen/Qwen3-8B 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "sim run --max-concurency exited $rc: $err"
[[ "$err" == "servelab sim run: unknown option --max-concurency (did you mean --max-concurrency?)"* ]] ||
  fail "sim run --max-concurency: $err"
err="$("$BIN" sim serve --prot=8000 -- vllm serve Qwen/Qwen3-8B 2>&1)"; rc=$?
[ "$rc" -eq 2 ] && [[ "$err" == *"unknown option --prot (did you mean --port?)"* ]] || fail "sim serve --prot: $err"
# sim serve refuses a port that is no TCP port (it used to wrap 70000 to 4464 and -5 to the default).
err="$("$BIN" sim serve --port 70000 -- vllm serve Qwen/Qwen3-8B 2>&1)"; rc=$?
[ "$rc" -eq 2 ] && [[ "$err" == *"70000"* ]] || fail "sim serve --port 70000 exited $rc: $err"
# sim run names the bench flags that change nothing in a prediction (no server, no sampler).
out="$("$BIN" sim run --hardware 1xH100 --scenario random-128in-16out-n5 --temperature 0.7 --header a=b \
  -- vllm serve Qwen/Qwen3-8B 2>&1)" || fail "sim run --temperature: $out"
[[ "$out" == *"Note: --header, --temperature are not applied by the twin"* ]] ||
  fail "sim run does not name --header and --temperature as without effect: $out"
# A --model-config of another checkpoint than the launch's model is said, not silently predicted.
DATA="${SERVELAB_DATA_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared/data}"
out="$("$BIN" sim run --hardware 2xH100 --scenario random-128in-16out-n5 \
  --model-config "$DATA/model-configs/gpt-oss-120b.json" -- vllm serve Qwen/Qwen3-8B -tp 2 2>&1)" ||
  fail "sim run --model-config: $out"
[[ "$out" == *"Warning: --model-config describes openai/gpt-oss-120b, not the launch's model Qwen/Qwen3-8B"* ]] ||
  fail "sim run --model-config of another model: $out"
# The header names the model as the launch does: this config's _name_or_path is the checkpoint directory
# it was saved from ("/opt/.../Llama-3.1-70B-Instruct/"), which is no name of the served model.
out="$("$BIN" sim run --hardware 4xH100 --scenario random-128in-16out-n5 \
  -- vllm serve nvidia/Llama-3.1-70B-Instruct-FP8 -tp 4 2>&1)" || fail "sim run Llama-3.1-70B FP8: $out"
[[ "$out" == *"Model: nvidia/Llama-3.1-70B-Instruct-FP8 (llama)"* && "$out" != *"/opt/"* ]] ||
  fail "sim run header names the config's checkpoint path, not the launch's model: $out"
# A launch on a kernel path the twin has no figure for says so before its numbers (MXFP4 MoE on Hopper
# through TensorRT-LLM's default CUTLASS backend), not only after the result block.
out="$("$BIN" sim run --hardware 1xH200 --scenario random-128in-16out-n5 -- trtllm-serve openai/gpt-oss-120b 2>&1)" ||
  fail "sim run trtllm gpt-oss-120b: $out"
before="${out%%Serving Benchmark Result*}"
[[ "$before" == *"Warning: this launch runs a kernel path the twin has no figure for: the numbers below can be many times off"* ]] ||
  fail "sim run on an unmodelled path does not warn before the result block: $out"
# A workload whose prompts share a prefix by construction, on a launch that caches prefixes: the twin
# prefills the prefix once and says so; the requests sent after the first find it cached.
out="$("$BIN" sim run --hardware 1xH100 --tokenizer "$DATA/gpt2-tokenizer.json" --dataset-name random \
  --random-input-len 64 --random-output-len 4 --random-prefix-len 512 --num-prompts 5 --request-rate 1 \
  -- vllm serve Qwen/Qwen3-8B 2>&1)" || fail "sim run --random-prefix-len: $out"
[[ "$out" == *"the random dataset's 512-token shared prefixes are prefilled once per rank"* ]] ||
  fail "sim run --random-prefix-len does not say how the shared prefix is cached: $out"
[[ "$out" == *"Prompt tokens from cached shared prefixes:"* ]] ||
  fail "sim run --random-prefix-len reused no cached prefix: $out"
# The random dataset at fixed lengths needs no tokenizer (offline, sim run asked the Hub for one where tune's
# twin, given the same flags, needed none): here the tokenizer named does not exist.
out="$("$BIN" sim run --hardware 1xH100 --tokenizer /nonexistent/tokenizer.json --dataset-name random \
  --random-input-len 200 --random-output-len 20 --num-prompts 10 -- vllm serve Qwen/Qwen3-8B 2>&1)" ||
  fail "sim run --dataset-name random without a tokenizer: $out"
grep -qE '^Total input tokens: +2000 *$' <<< "$out" && [[ "$out" == *"Workload: random (10 requests)"* ]] ||
  fail "sim run --dataset-name random at fixed lengths: $out"
# --network on one node changes nothing, and says so.
out="$("$BIN" sim run --hardware 1xH100 --network 8x400G --scenario random-128in-16out-n5 \
  -- vllm serve Qwen/Qwen3-8B 2>&1)" || fail "sim run --network on one node: $out"
[[ "$out" == *"Note: --network 8x400G has no effect: --hardware 1xH100 is one node"* ]] ||
  fail "sim run --network on one node says nothing: $out"
# ops query checks what the user typed (new-user trial: an unknown column was ignored, a repeated one took
# the first value, m=-5 answered the m = 1 row): each is an error naming it, exit 2.
q=(ops query --gpu h100_sxm --backend vllm --version 0.14.0 --table gemm_perf gemm_dtype=bfloat16 n=4096 k=4096)
out="$("$BIN" "${q[@]}" m=3000 2>&1)" || fail "ops query: $out"
[[ "$out" == *"latency_ms: "* ]] || fail "ops query gives no latency: $out"
for bad in "m=3000 bogus=1|has no column 'bogus'" "m=3000 m=1|column 'm' is given twice" \
           "m=-5|m is an interpolation axis: give a number >= 0, not '-5'"; do
  err="$("$BIN" "${q[@]}" ${bad%%|*} 2>&1)"; rc=$?
  [ "$rc" -eq 2 ] || fail "ops query ${bad%%|*} exited $rc: $err"
  [[ "$err" == *"${bad#*|}"* ]] || fail "ops query ${bad%%|*}: $err"
done
# ... and says whether the answer is a measured row or interpolated; every open key column is named at once
# with its measured values; a filter no table matches lists the values there are (exit 1), and "H100" finds
# h100_sxm (new-user trial: "0 of 798 tables", "measured releases: none", five rounds of "ambiguous").
out="$("$BIN" "${q[@]}" m=3000 2>&1)"
[[ "$out" == *"interpolated between measured points along m"* ]] || fail "ops query does not say it interpolated: $out"
err="$("$BIN" ops query --gpu H100 --backend vllm --version 0.14.0 --table moe_perf num_tokens=64 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "ops query with open keys exited $rc: $err"
[[ "$err" == *"moe_dtype: "*"num_experts: "* ]] || fail "ops query does not name every open key: $err"
err="$("$BIN" ops query --gpu h200_sxm --backend sglang --version 0.5.6.post2 --table generation_mla_perf \
  kv_cache_dtype=fp8 tp_size=8 2>&1)"; rc=$?
[ "$rc" -eq 2 ] || fail "ops query with open axes exited $rc: $err"
[[ "$err" == *"num_heads: 8 .. 16"*"batch_size: 1 .. 1024"*"step: "* ]] || fail "ops query does not name every open axis: $err"
err="$("$BIN" ops list --gpu h100_sxm --backend foo 2>&1)"; rc=$?
[ "$rc" -eq 1 ] || fail "ops list matching nothing exited $rc: $err"
[[ "$err" == *"no table has --backend foo (with --gpu h100_sxm); there are: "*"vllm"* ]] || fail "ops list --backend foo: $err"
# bench serve words a bad number or choice as argparse does, exit 2 (new-user trial: CLI11's "Could not convert:
# --num-prompts = 3,1.5", exit 104, quoting the earlier valid value).
for bad in "--num-prompts 3 --num-prompts 1.5|argument --num-prompts: invalid int value: '1.5'" \
           "--request-timeout-s x|argument --request-timeout-s: invalid float value: 'x'" \
           "--backend foo|argument --backend: invalid choice: 'foo' (choose from 'openai', 'openai-chat', 'vllm')"; do
  err="$("$BIN" bench serve --model m --port 1 ${bad%%|*} 2>&1)"; rc=$?
  [ "$rc" -eq 2 ] || fail "bench serve ${bad%%|*} exited $rc: $err"
  [[ "$err" == *"servelab bench serve: error: ${bad#*|}"* ]] || fail "bench serve ${bad%%|*}: $err"
done
echo "cli_usage: ok"
