#!/usr/bin/env bash
# End-to-end: `servelab tune --target slurm` on a real Slurm (issue 13 §4). The one-host cluster of
# scripts/slurm_test_cluster.sh (started by the ctest fixture slurm_cluster_start; SLURM_TEST_DIR) runs
# tests/e2e/slurm/study.toml's five grid trials as Slurm jobs on the engine stand-ins:
#   1. pre-flight: a partition that does not exist and more GPUs per node than the nodes declare stop the
#      study before any job is submitted;
#   2. Ctrl-C while jobs run: tune exits 130 and its jobs are cancelled (scancel), none left in squeue;
#   3. the study: three or four trials run at once ([slurm] max_parallel = 4, 2 of the 8 GRES GPUs each); tune is
#      killed (SIGKILL) while jobs run; one running job is cancelled from outside (scancel); the resumed tune
#      waits for the jobs still running instead of submitting them again (one job per trial, the same ids),
#      also for a job whose id the killed tune had not written yet (found by its batch script);
#      the slow trial ends at its 1-minute time limit; every trial is classified (ok, time_limit, cancelled).
# Every wait is bounded. Usage: tune_slurm_e2e.sh SERVELAB_BINARY
set -euo pipefail
BIN="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
SRC="$(cd "$(dirname "$0")/../.." && pwd)"
: "${SLURM_TEST_DIR:?the slurm_cluster_start fixture sets SLURM_TEST_DIR}"
export SLURM_CONF="$SLURM_TEST_DIR/slurm.conf"
[ -f "$SLURM_CONF" ] || { echo "FAIL: no test cluster at $SLURM_TEST_DIR (fixture slurm_cluster_start)"; exit 1; }
STUDY="$SRC/tests/e2e/slurm/study.toml"
TMP="$(mktemp -d)"
TUNE_PID=""
cleanup() {
  if [ -n "$TUNE_PID" ]; then kill -9 "$TUNE_PID" 2>/dev/null || true; fi
  scancel --name=servelab-slurm-e2e 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$TMP"/run/*.txt; do [ -f "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done; exit 1; }
t_start=$(date +%s)
mkdir -p "$TMP/run"
cd "$TMP/run"
# The jobs inherit this environment (sbatch --export=ALL): the stand-ins at a quarter of real time (so that a
# busy 2-core host does not make the timing untrustworthy: "invalid"), a short start-up.
export PATH="$SRC/tools/standins/bin:$PATH" PYTHONPATH="$SRC/tools/standins/python" SERVELAB_BIN="$BIN"
export SERVELAB_STANDIN_TIME_SCALE=0.25 SERVELAB_STANDIN_STARTUP_S=0.3

db() { python3 - "$@" <<'PY'
import sqlite3, sys
con = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=10)
rows = con.execute(sys.argv[2]).fetchall()
print("\n".join("|".join(str(c) for c in r) for r in rows))
PY
}
trials_of() { db "$1/results.sqlite" "select count(*) from trials" 2>/dev/null || echo 0; }
jobs_of() { db "$1/results.sqlite" "select count(*) from slurm_jobs where job_id != ''" 2>/dev/null || echo 0; }
db_write() { python3 -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=10); c.execute(sys.argv[2]); c.commit()' "$@"; }
live_jobs() { squeue -h --name=servelab-slurm-e2e -t PENDING,RUNNING,CONFIGURING,COMPLETING -o %i | wc -l; }
running_jobs() { squeue -h --name=servelab-slurm-e2e -t RUNNING -o %i | wc -l; }
wait_for() {  # seconds, description, condition (shell text, evaluated each time): until it holds
  local limit="$1" what="$2" cond="$3"
  for _ in $(seq 1 $((limit * 10))); do eval "$cond" && return 0; sleep 0.1; done
  fail "$what: not within $limit s"
}

# ---- 1. pre-flight -------------------------------------------------------------------------------------
sed 's/^partition = "servelab"/partition = "nope"/' "$STUDY" > bad-partition.toml
sed 's/^gpus_per_trial = 2/gpus_per_trial = 16\ngpus_per_node = 16/' "$STUDY" > bad-gres.toml
set +e
"$BIN" tune bad-partition.toml --out pf1 > pf1.txt 2>&1; rc1=$?
"$BIN" tune bad-gres.toml --out pf2 > pf2.txt 2>&1; rc2=$?
set -e
[ "$rc1" -eq 2 ] && [ "$rc2" -eq 2 ] || fail "pre-flight failures must exit 2 ($rc1, $rc2)"
grep -q "\[FAILED\] partition: partition 'nope' does not exist (partitions: servelab)" pf1.txt || fail "partition check"
grep -q "\[FAILED\] GRES: a trial asks for --gres=gpu:16 on 1 node(s), but 0 of the 1 node(s) of partition 'servelab' have 16 gpu GPU(s) (the most on one node: 8)" pf2.txt ||
  fail "GRES check"
grep -q "nothing was submitted" pf2.txt || fail "pre-flight must say nothing was submitted"
[ "$(live_jobs)" -eq 0 ] || fail "pre-flight submitted a job"
echo "pre-flight: a missing partition and too few GPUs per node stop the study (ok)"

# ---- 2. Ctrl-C cancels the study's jobs --------------------------------------------------------------------
"$BIN" tune "$STUDY" --out ctrlc > ctrlc.txt 2>&1 & TUNE_PID=$!
wait_for 60 "Ctrl-C run: 4 jobs submitted" '[ "$(jobs_of ctrlc)" -ge 4 ]'
wait_for 60 "Ctrl-C run: 2 jobs running" '[ "$(running_jobs)" -ge 2 ]'
kill -INT "$TUNE_PID"
set +e; timeout 60 tail --pid="$TUNE_PID" -f /dev/null; wait "$TUNE_PID"; rc=$?; set -e; TUNE_PID=""
[ "$rc" -eq 130 ] || fail "Ctrl-C: tune exited $rc, not 130"
grep -q "slurm: cancelled [0-9]* job(s) of the study" ctrlc.txt || fail "Ctrl-C: no scancel"
wait_for 30 "Ctrl-C: the study's jobs gone from squeue" '[ "$(live_jobs)" -eq 0 ]'
unfinished=$(db ctrlc/results.sqlite "select count(*) from slurm_jobs where trial_key not in (select trial_key from trials)")
[ "$unfinished" -eq 0 ] || fail "Ctrl-C: $unfinished cancelled job(s) still in the store (--resume would wait for them)"
echo "Ctrl-C: exit 130, the study's jobs cancelled (ok)"

# ---- 3. parallel trials, SIGKILL + an outside scancel + --resume, the time limit ---------------------------
"$BIN" tune "$STUDY" --out out > run1.txt 2>&1 & TUNE_PID=$!
wait_for 60 "4 jobs submitted" '[ "$(jobs_of out)" -ge 4 ]'
wait_for 60 "3 trials running at once" '[ "$(running_jobs)" -ge 3 ]'
peak=$(running_jobs)
# Kill tune while the two slow trials run (their engines take 900 s to start).
wait_for 60 "the first trial recorded" '[ "$(trials_of out)" -ge 1 ]'
# The fifth trial is submitted when the first frees its slot: killed between its sbatch and its row in the
# store, its job would run unrecorded and the resumed tune submit it again (a known race of SIGKILL, in the
# session note; a clean-clone run under load hit it). Kill once it is recorded.
wait_for 60 "the fifth job recorded" '[ "$(jobs_of out)" -ge 5 ]'
kill -9 "$TUNE_PID"; wait "$TUNE_PID" 2>/dev/null || true; TUNE_PID=""
db out/results.sqlite "select trial_key || '=' || job_id from slurm_jobs order by trial_key" > jobs_before.txt
limit_job=$(db out/results.sqlite "select job_id from slurm_jobs where trial_key like '%variant=slow-limit%'")
cancel_job=$(db out/results.sqlite "select job_id from slurm_jobs where trial_key like '%variant=slow-cancel%'")
[ -n "$limit_job" ] && [ -n "$cancel_job" ] || fail "the slow trials were not submitted before the kill"
squeue -h -j "$limit_job,$cancel_job" -t RUNNING -o %i | grep -q . || fail "the slow jobs died with tune"
scancel "$cancel_job"
# The race above, made to happen: tune killed after sbatch returned the slow-limit trial's id but before it was
# written leaves the row sbatch's caller writes first (no id, SUBMITTING). --resume finds the job by its script.
db_write out/results.sqlite "update slurm_jobs set job_id = '', state = 'SUBMITTING' where trial_key like '%variant=slow-limit%'"
"$BIN" tune "$STUDY" --out out --resume > run2.txt 2>&1 & TUNE_PID=$!
set +e; timeout 200 tail --pid="$TUNE_PID" -f /dev/null; wait "$TUNE_PID"; rc=$?; set -e; TUNE_PID=""
[ "$rc" -eq 0 ] || fail "the resumed study exited $rc"
grep -q "slurm: job $limit_job of vllm{variant=slow-limit} was submitted by the earlier run but its id not recorded" run2.txt ||
  fail "the resumed tune did not find the unrecorded job $limit_job by its script"
grep -q "slurm: job $cancel_job of vllm{variant=slow-cancel} from the earlier run (RUNNING): waiting for it, not submitting again" run2.txt ||
  fail "the resumed tune did not wait for the job $cancel_job"
# One job per trial: every job id of the killed run is the one the trial ended with, one output per trial.
db out/results.sqlite "select trial_key || '=' || job_id from slurm_jobs order by trial_key" > jobs_after.txt
while IFS= read -r line; do
  grep -qxF "$line" jobs_after.txt || fail "the resumed tune submitted ${line%%=*} again (was job ${line##*=})"
done < jobs_before.txt
for d in out/slurm/*/; do
  n=$(ls "$d" | grep -c '^slurm-.*\.out$' || true)
  [ "$n" -eq 1 ] || fail "$d holds $n job outputs, not 1"
done
[ "$(ls -d out/slurm/*/ | wc -l)" -eq 5 ] || fail "expected 5 trial jobs, found $(ls -d out/slurm/*/ | wc -l)"
python3 - out/results.sqlite "$limit_job" "$cancel_job" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
rows = {k: (s, r) for k, s, r in con.execute("select config_key, status, reason from trials")}
def get(variant):
    key = "vllm{}" if variant is None else "vllm{variant=%s}" % variant
    assert key in rows, "no trial of %s: %s" % (key, sorted(rows))
    return rows[key]
s, r = get("slow-limit")
assert s == "time_limit", (s, r)
assert r.startswith("Slurm job %s hit its time limit (0-00:01:00, [slurm] time_limit_min = 1)" % sys.argv[2]), r
s, r = get("slow-cancel")
assert s == "cancelled", (s, r)
assert r.startswith("Slurm job %s was cancelled (scancel, or an administrator; not by this tune)" % sys.argv[3]), r
for v in (None, "seqs64", "seqs128"):
    s, r = get(v)
    assert s == "ok", (v, s, r)
    tok = con.execute("select m.value from metrics m join trials t on t.id = m.trial_id where t.config_key = ? "
                      "and m.metric = 'Total Token throughput (tok/s)'", ("vllm{}" if v is None else "vllm{variant=%s}" % v,)).fetchone()
    assert tok and tok[0] > 0, (v, tok)
env = dict(con.execute("select key, value from environment"))
assert env["target"] == "slurm", env["target"]
assert env["slurm"] == "partition servelab, --gres=gpu:2 on 1 node(s) per trial, --time 0-00:01:00, up to 4 jobs at once", env["slurm"]
print("classified: 3 ok, slow-limit time_limit (job %s), slow-cancel cancelled (job %s)" % (sys.argv[2], sys.argv[3]))
PY
grep -q "^best: vllm " run2.txt || fail "no best config"
[ -s out/report.md ] || fail "no report"
[ "$(live_jobs)" -eq 0 ] || fail "jobs left in squeue"
echo "slurm study: $peak trials at once, SIGKILL + --resume waited for the running jobs, time limit and scancel classified (ok)"
echo "tune slurm e2e: ok ($(( $(date +%s) - t_start )) s)"
