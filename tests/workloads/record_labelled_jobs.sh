#!/usr/bin/env bash
# Records labelled PyTorch jobs on an NVIDIA GPU, with gpulse and nvidia-smi sampling beside them.
#
#   bash tests/workloads/record_labelled_jobs.sh GPULSE_BIN OUTDIR JOB [JOB ...]
#
# Writes into OUTDIR:
#   all.ndjson.zst      `GPULSE_BIN record --interval 250ms` over the whole batch (gpulse-record.log: its stderr)
#   all.smi.csv         nvidia-smi every 250 ms (smi.log: its stderr)
#   marks.csv, <job>.steps.csv   the jobs' own marks and step timings (see labelled_jobs.py)
#   jobs.log            the jobs' output, also printed
# then prints one line per job from marks.csv.
#
# Environment:
#   TUI=1        also runs the dashboard (GPULSE_BIN with no command) in a detached tmux session at
#                160x48 and saves its screen every 5 s to OUTDIR/screens/<unix>.txt
#   TUI_SMALL=1  with TUI=1, a second session at 80x24 saved to OUTDIR/screens-80x24/<unix>.txt
#   BUDGET_S=N   skips jobs that would end more than N s after the jobs began
#
# Exit status: that of labelled_jobs.py (0 when every job reached its end mark, 1 otherwise), or 2
# on bad usage. Every process this script starts is stopped when it exits, whatever the jobs did.
set -euo pipefail

usage() {
    echo "usage: $0 GPULSE_BIN OUTDIR JOB [JOB ...]" >&2
    echo "jobs: python3 $(dirname "$0")/labelled_jobs.py --list" >&2
    exit 2
}
[[ $# -ge 3 ]] || usage
gpulse_path=$(command -v "$1" || true)
[[ -n "$gpulse_path" && -x "$gpulse_path" ]] || { echo "not an executable: $1" >&2; usage; }
GPULSE_BIN=$(realpath "$gpulse_path")
OUTDIR=$2
shift 2
JOBS=("$@")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUTDIR"
OUTDIR=$(realpath "$OUTDIR")

record_pid="" smi_pid="" jobs_pid=""
capture_pids=() tmux_sessions=()

alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

# Sends each signal in turn, waiting up to $2 seconds after each, until the process is gone.
stop_process() {
    local pid=$1 grace=$2 sig waited
    shift 2
    for sig in "$@"; do
        alive "$pid" || break
        kill "-$sig" "$pid" 2>/dev/null || true
        for ((waited = 0; waited < grace * 10; waited++)); do
            alive "$pid" || break
            sleep 0.1
        done
    done
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    trap - EXIT INT TERM
    # The jobs' driver stops its running job's whole process group on SIGTERM.
    if alive "$jobs_pid"; then stop_process "$jobs_pid" 15 TERM KILL; fi
    local pid session
    for pid in ${capture_pids[@]+"${capture_pids[@]}"}; do stop_process "$pid" 2 TERM KILL; done
    for session in ${tmux_sessions[@]+"${tmux_sessions[@]}"}; do
        tmux kill-session -t "$session" 2>/dev/null || true
    done
    # SIGINT lets gpulse write its last lines and close the zstd stream; SIGTERM does the same.
    if alive "$record_pid"; then stop_process "$record_pid" 10 INT TERM KILL; fi
    if alive "$smi_pid"; then stop_process "$smi_pid" 3 INT TERM KILL; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs the dashboard in a detached tmux session and saves its screen every 5 s.
start_dashboard() {
    local session=$1 cols=$2 rows=$3 dir=$4
    mkdir -p "$dir"
    tmux new-session -d -s "$session" -x "$cols" -y "$rows" "$(printf '%q' "$GPULSE_BIN")"
    tmux_sessions+=("$session")
    (
        while tmux has-session -t "$session" 2>/dev/null; do
            tmux capture-pane -p -t "$session" >"$dir/$(date +%s).txt" 2>/dev/null || true
            sleep 5
        done
    ) &
    capture_pids+=("$!")
}

"$GPULSE_BIN" record "$OUTDIR/all.ndjson.zst" --interval 250ms 2>"$OUTDIR/gpulse-record.log" &
record_pid=$!
smi_fields=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw
smi_fields+=,clocks.sm,temperature.gpu,pcie.link.gen.current,pcie.link.width.current
nvidia-smi --query-gpu="$smi_fields" --format=csv -lms 250 >"$OUTDIR/all.smi.csv" 2>"$OUTDIR/smi.log" &
smi_pid=$!
if [[ "${TUI:-0}" == 1 ]]; then
    start_dashboard "gpulse-labelled-$$-160x48" 160 48 "$OUTDIR/screens"
    if [[ "${TUI_SMALL:-0}" == 1 ]]; then
        start_dashboard "gpulse-labelled-$$-80x24" 80 24 "$OUTDIR/screens-80x24"
    fi
fi
sleep 2
alive "$record_pid" || { echo "warning: gpulse record stopped:" >&2; tail -n 5 "$OUTDIR/gpulse-record.log" >&2 || true; }
alive "$smi_pid" || { echo "warning: nvidia-smi stopped:" >&2; tail -n 5 "$OUTDIR/smi.log" >&2 || true; }

budget=()
if [[ -n "${BUDGET_S:-}" ]]; then budget=(--budget "$BUDGET_S"); fi
PYTHONUNBUFFERED=1 python3 "$HERE/labelled_jobs.py" "$OUTDIR" "${JOBS[@]}" ${budget[@]+"${budget[@]}"} \
    > >(tee "$OUTDIR/jobs.log") 2>&1 &
jobs_pid=$!
jobs_status=0
wait "$jobs_pid" || jobs_status=$?
jobs_pid=""
cleanup

python3 - "$OUTDIR/marks.csv" "${JOBS[@]}" <<'EOF'
import sys

path, jobs = sys.argv[1], sys.argv[2:]
last = {}
try:
    with open(path) as f:
        lines = f.read().splitlines()
except OSError:
    lines = []
for line in lines:
    label = line.partition(",")[2]
    job, _, rest = label.partition(":")
    event, _, pairs = rest.partition(" ")
    if event in ("end", "error", "skipped"):
        last[job] = (event, dict(p.split("=", 1) for p in pairs.split() if "=" in p))
shown = ["steps", "wait_share", "lost_share", "step_median", "compute_median", "batch_spacing_median"]
for job in jobs:
    event, values = last.get(job, ("no end mark", {}))
    if event == "end":
        values = {k: values[k] for k in shown if k in values}
    print(f"{job}: {event} " + " ".join(f"{k}={v}" for k, v in values.items()))
EOF
exit "$jobs_status"
