#!/usr/bin/env bash
# End-to-end: the reference study (studies/deepseek-v3.2-h200x8.toml) through `servelab tune --target local`
# on the engine stand-ins (tools/standins), time-scaled and with --prompts-scale, as on a GPU node (issue 10,
# issue 9 §3):
#   1. pre-flight failures stop the study before any launch, with their messages;
#   2. SIGKILL of tune mid-study: no engine process left (process table), at most one trial lost, and
#      --resume skips every finished trial;
#   3. a rerun without --resume refuses and keeps the results;
#   4. Ctrl-C (once, and twice 10 ms apart) leaves no engine process behind;
#   5. the study finishes; start-up refusals, OOM and the run-time crash are classified as the twin
#      classifies them (the same engine messages), measured throughputs are within 10% of the twin's.
# Usage: tune_local_e2e.sh SERVELAB_BINARY
set -euo pipefail
BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
SHARED_DATA="${SERVELAB_DATA_DIR:-$SRC/../shared/data}"
STUDY="$SRC/studies/deepseek-v3.2-h200x8.toml"
TMP="$(mktemp -d)"
source "$(dirname "$0")/ports.sh"
PORT=$(free_port)
SCALE=0.05
TUNE_PID=""
cleanup() {
  if [ -n "$TUNE_PID" ]; then kill -9 "$TUNE_PID" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
t_start=$(date +%s)

# A data directory with a ShareGPT_V3 file built from the real conversations in shared/data (the 640 MB
# original is not reachable here; the twin samples the same file, so both sides see one workload).
mkdir -p "$TMP/data" "$TMP/run"
python3 "$SRC/scripts/gen_large_sharegpt.py" --data "$SHARED_DATA" --size-mb 8 \
  --out "$TMP/data/ShareGPT_V3_unfiltered_cleaned_split.json" > /dev/null
cd "$TMP/run"
# The stand-in engines serve with the binary under test (as tune_slurm_e2e.sh), not with whatever
# build/servelab of the checkout they would find first.
export SERVELAB_DATA_DIR="$TMP/data" SERVELAB_STANDIN_TIME_SCALE=20 SERVELAB_STANDIN_STARTUP_S=0.3 SERVELAB_BIN="$BIN"
STANDIN_PATH="$SRC/tools/standins/bin:$PATH"
export PYTHONPATH="$SRC/tools/standins/python"
TUNE=("$BIN" tune "$STUDY" --target local --prompts-scale "$SCALE" --port "$PORT" --out out)

# ---- 1. pre-flight ------------------------------------------------------------------------------------
set +e
PATH="/usr/bin:/bin" "${TUNE[@]}" > pf1.txt 2>&1; rc1=$?
PATH="$STANDIN_PATH" "${TUNE[@]}" > pf2.txt 2>&1; rc2=$?   # no chat template in the working directory
set -e
[ "$rc1" -eq 2 ] && [ "$rc2" -eq 2 ] || { cat pf1.txt pf2.txt; fail "pre-flight failures must exit 2 ($rc1, $rc2)"; }
grep -q "\[FAILED\] engine vllm: engine executable 'vllm' not found on PATH (/usr/bin:/bin)" pf1.txt || { cat pf1.txt; fail "missing engine"; }
grep -q "\[FAILED\] file --chat-template: sglang --chat-template ./tool_chat_template_deepseekv32.jinja: no such file" pf2.txt ||
  { cat pf2.txt; fail "missing chat template"; }
grep -q "pre-flight failed: nothing was launched" pf2.txt || fail "pre-flight must say nothing was launched"
[ ! -e out ] || fail "pre-flight created the output directory"
# The stand-in sglang ignores the template; a real node needs SGLang's file here (docs/gpu-node.md).
echo "{# stand-in placeholder: the sglang stand-in does not read it #}" > tool_chat_template_deepseekv32.jinja
export PATH="$STANDIN_PATH"
echo "pre-flight: failures stop the study (ok)"

# ---- the twin's play of the same study (same data, same prompts scale) -----------------------------------
"$BIN" tune "$STUDY" --target twin --prompts-scale "$SCALE" --out twin -q > twin.txt 2>&1 || { cat twin.txt; fail "twin run"; }

db() { python3 - "$@" <<'PY'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
print(con.execute(sys.argv[2]).fetchone()[0])
PY
}
launched() { db out/results.sqlite "select count(*) from trials where status != 'rejected'" 2>/dev/null || echo 0; }
# An engine on our port: the stand-in (python) before it execs, then `servelab sim serve ... -- <launch>`.
engines_left() { pgrep -f -- "(vllm|trtllm-serve|sglang\.launch_server) .*--port $PORT( |$)" || true; }
wait_no_engine() {  # the process table holds no engine on our port within 15 s
  for _ in $(seq 1 150); do [ -z "$(engines_left)" ] && return 0; sleep 0.1; done
  ps -o pid,pgid,args -p "$(engines_left | tr '\n' ',' | sed 's/,$//')" || true
  fail "engine process(es) left behind after $1"
}
start_tune() { "${TUNE[@]}" "$@" > "tune.$RANDOM.txt" 2>&1 & TUNE_PID=$!; }
wait_launched() {  # until at least $1 launched trials are recorded
  for _ in $(seq 1 1200); do
    [ "$(launched)" -ge "$1" ] && return 0
    kill -0 "$TUNE_PID" 2>/dev/null || fail "tune ended early: $(tail -3 tune.*.txt)"
    sleep 0.1
  done
  fail "fewer than $1 trials after 120 s"
}
wait_engine_up() { for _ in $(seq 1 300); do [ -n "$(engines_left)" ] && return 0; sleep 0.05; done; }

# ---- 2. SIGKILL mid-study, then --resume -----------------------------------------------------------------
start_tune
wait_launched 6
wait_engine_up
kill -9 "$TUNE_PID"; wait "$TUNE_PID" 2>/dev/null || true; TUNE_PID=""
wait_no_engine "kill -9 of tune"
rows=$(launched)
all_rows=$(db out/results.sqlite "select count(*) from trials")
logs=$(ls out/logs | wc -l)
[ $((logs - rows)) -le 1 ] || fail "kill -9 lost $((logs - rows)) trials (engine logs $logs, recorded $rows)"
db out/results.sqlite "select group_concat(trial_key || '@' || wall_started_s, ' ') from trials" > before_kill.txt
echo "kill -9: no engine left, $rows trials kept, $((logs - rows)) lost (ok)"

# ---- 3. rerun without --resume refuses --------------------------------------------------------------------
set +e; "${TUNE[@]}" > rerun.txt 2>&1; rc=$?; set -e
[ "$rc" -eq 2 ] || { cat rerun.txt; fail "a rerun without --resume must exit 2, got $rc"; }
grep -q "already holds $all_rows trial(s) of study 'deepseek-v3.2-h200x8'; refusing to overwrite them" rerun.txt ||
  { cat rerun.txt; fail "rerun message"; }
[ "$(launched)" -eq "$rows" ] || fail "the refused rerun changed the database"
echo "rerun without --resume: refused, results kept (ok)"

# ---- 4. Ctrl-C once, and twice 0.15 s apart ----------------------------------------------------------------
for signals in 1 2; do
  n=$(launched)
  start_tune --resume
  wait_launched $((n + 2))
  wait_engine_up
  kill -INT "$TUNE_PID"
  [ "$signals" -eq 2 ] && { sleep 0.15; kill -INT "$TUNE_PID" 2>/dev/null || true; }
  set +e; wait "$TUNE_PID"; rc=$?; set -e; TUNE_PID=""
  [ "$rc" -eq 130 ] || fail "Ctrl-C x$signals: tune exited $rc, not 130"
  wait_no_engine "Ctrl-C x$signals"
  echo "Ctrl-C x$signals: exit 130, no engine left (ok)"
done

# ---- 5. finish, then compare with the twin -----------------------------------------------------------------
"${TUNE[@]}" --resume > finish.txt 2>&1 || { tail -20 finish.txt; fail "the resumed study did not finish"; }
wait_no_engine "the finished study"
grep -q "^best: " finish.txt || fail "no best config"
grep -q "Rehearsal on engine stand-ins" out/report.md || fail "the report does not say stand-ins were used"
grep -q "Time scale 20" out/report.md || fail "the report does not label engine time"
python3 - "$BIN" out/results.sqlite twin/results.sqlite before_kill.txt <<'PY'
import json, os, sqlite3, subprocess, sys
binary = sys.argv[1]
local, twin = (sqlite3.connect(p) for p in sys.argv[2:4])
q = ("select t.trial_key, t.config_key, t.status, t.reason, t.wall_started_s, m.value, c.argv_json, c.env_json "
     "from trials t join commands c on c.trial_id = t.id left join metrics m on m.trial_id = t.id and "
     "m.scenario = 'sharegpt-1000' and m.metric = 'Total Token throughput (tok/s)' "
     "where t.phase in ('baseline', 'greedy') and t.status != 'rejected'")
L = {r[1]: r for r in local.execute(q)}
T = {r[1]: r for r in twin.execute(q)}
# Nothing measured before the kill was measured again (same key, same start time).
for item in open(sys.argv[4]).read().split():
    key, started = item.rsplit("@", 1)
    row = local.execute("select wall_started_s from trials where trial_key = ?", (key,)).fetchone()
    # (SQLite prints REALs with 15 digits: 10 ms resolution on epoch seconds; a rerun starts seconds later.)
    assert row and abs(row[0] - float(started)) < 0.01, "trial %s was run again after --resume" % key

def twin_failure(argv, env):
    """The twin's verdict on this exact launch (sim run): its failure reason, or None."""
    out = subprocess.run([binary, "sim", "run", "--scenario", "random-128in-4out", "--"] + argv,
                         env=dict(os.environ, **env), capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("Predicted failure: "):
            return line[len("Predicted failure: "):]
    assert out.returncode == 0, out.stdout + out.stderr
    return None

kinds, compared, invalid, worst = {}, 0, 0, 0.0
for key, l in L.items():
    if l[2] == "invalid":
        invalid += 1
        continue
    compared += 1
    if key in T:  # the twin's play of the study measured the same config
        t = T[key]
        assert l[2] == t[2], "%s: local %s (%s) vs twin %s (%s)" % (key, l[2], l[3], t[2], t[3])
        expected = t[3] if t[2] != "ok" else None
        if l[2] == "ok":
            dev = abs(l[5] - t[5]) / t[5]
            worst = max(worst, dev)
            assert dev < 0.10, "%s: measured %.1f tok/s vs twin %.1f" % (key, l[5], t[5])
    else:  # a config only the local path reached: ask the twin about that launch
        expected = twin_failure(json.loads(l[6]), json.loads(l[7]))
        assert (expected is None) == (l[2] == "ok"), "%s: local %s (%s), twin predicts %s" % (key, l[2], l[3], expected)
    if expected is not None:
        assert expected in l[3], "%s: the engine's message differs:\n  local: %s\n  twin:  %s" % (key, l[3], expected)
    kinds[l[2]] = kinds.get(l[2], 0) + 1
# (How many the greedy path reaches depends on the embedded calibration and on how many trials a busy host
# makes invalid: 33 compared (20 invalid) on an idle 2-core box, 15 with a build running beside it, 11 with a
# sanitizer build and a second test suite beside it.)
assert compared >= 8, "only %d configs compared" % compared
assert all(kinds.get(k, 0) >= 1 for k in ("startup_refused", "oom", "crashed")), kinds
print("classification: %d launches as the twin predicts (%s); %d invalid (host too busy for the scale) skipped; "
      "throughput within %.1f%% of the twin" % (compared, ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items())),
                                                invalid, 100 * worst))
PY
echo "tune local e2e: ok ($(( $(date +%s) - t_start )) s)"
