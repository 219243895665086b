#!/usr/bin/env bash
# Whose work each GPU process is, on a real NVIDIA machine: starts small PyTorch jobs in the cgroup
# layouts gpulse reads, runs `gpulse snapshot --json` beside them, and prints for each process
# its own /proc/PID/cgroup next to the job gpulse names. Needs root (systemd-run, cgroup v2 under
# /sys/fs/cgroup), python3 with torch and CUDA, and gpulse.
#
#   sudo bash tests/workloads/job_attribution.sh [GPULSE_BINARY]
#
# The jobs (each a matmul loop that waits 0.5 s between bursts, for 60 s, on GPU 0):
#   host      a plain process in this shell's cgroup                   -> no job ("—")
#   docker    in a transient scope system.slice/docker-<64 hex>.scope   -> docker <12 hex>
#   pod       in kubepods.slice/.../kubepods-burstable-pod<uid>.slice/cri-containerd-<64 hex>.scope
#                                                                        -> pod <8 hex of the UID>
#   slurm     moved into system.slice/gpulsetest_slurmstepd.scope/job_4242/step_0/user/task_0 with
#             SLURM_JOB_ID=4242 SLURM_JOB_NAME=attr-test in its environment -> slurm 4242 attr-test
#   container (only with IMAGE=<a local image with torch> and Docker's NVIDIA runtime) a real
#             `docker run --gpus device=0` container named gpulse-attr -> docker gpulse-attr
# The scopes and the Slurm-like cgroup are removed at the end; MIG mode is never touched.
set -euo pipefail
gpulse=${1:-target/release/gpulse}
[[ $EUID -eq 0 ]] || { echo "run as root (systemd-run, /sys/fs/cgroup)" >&2; exit 2; }
[[ -x $gpulse ]] || { echo "no gpulse at $gpulse (cargo build --release)" >&2; exit 2; }
hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }
job='import torch, time
x = torch.randn(4096, 4096, device="cuda:0")
end = time.time() + 60
while time.time() < end:
    for _ in range(20):
        y = x @ x
    torch.cuda.synchronize()
    time.sleep(0.5)'
cid=$(hex 32) pod_cid=$(hex 32) uid=$(cat /proc/sys/kernel/random/uuid)
slurm=/sys/fs/cgroup/system.slice/gpulsetest_slurmstepd.scope/job_4242/step_0/user/task_0
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    docker rm -f gpulse-attr >/dev/null 2>&1 || true
    sleep 1
    for d in "$slurm" "${slurm%/*}" "${slurm%/*/*}" "${slurm%/*/*/*}" "${slurm%/*/*/*/*}"; do
        rmdir "$d" 2>/dev/null || true
    done
}
trap cleanup EXIT

python3 -c "$job" & pids+=($!)
systemd-run --quiet --scope --unit="docker-$cid.scope" python3 -c "$job" & pids+=($!)
systemd-run --quiet --scope --slice="kubepods-burstable-pod${uid//-/_}.slice" \
    --unit="cri-containerd-$pod_cid.scope" python3 -c "$job" & pids+=($!)
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
    mkdir -p "$slurm"
    (echo $BASHPID > "$slurm/cgroup.procs"; \
     SLURM_JOB_ID=4242 SLURM_JOB_NAME=attr-test exec python3 -c "$job") & pids+=($!)
else
    echo "cgroup v1: the Slurm layout is skipped" >&2
fi
if [[ -n ${IMAGE:-} ]]; then
    docker run -d --rm --gpus device=0 --name gpulse-attr "$IMAGE" python3 -c "$job" >/dev/null
fi
echo "waiting 15 s for the jobs to reach the GPU..." >&2
sleep 15

snap=$(mktemp)
"$gpulse" --backend nvml snapshot --json > "$snap"
python3 - "$snap" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
for g in doc["gpus"]:
    for p in g["processes"]:
        job = p.get("job")
        label = job["label"] if job else "—"
        try:
            cg = open(f"/proc/{p['pid']}/cgroup").read().strip().splitlines()[-1]
        except OSError:
            cg = "(not visible)"
        print(f"GPU {g['index']} pid {p['pid']:>7}  {label:<32} {cg}")
        if p.get("job_note"):
            print(f"{'':>20}note: {p['job_note']}")
    for m in g.get("mig", []):
        print(f"GPU {g['index']} MIG {m['gpu_instance_id']}/{m['compute_instance_id']} {m['profile']} verdict {m['verdict']}")
EOF
rm -f "$snap"
