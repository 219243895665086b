#!/usr/bin/env bash
# Check gpulse's health readings on a real NVIDIA GPU against nvidia-smi. Reads only: it never
# injects an error or resets a GPU.
#
#   bash tests/workloads/h200_health.sh [SECONDS] [GPU]      (default 30 s, GPU 0; run as root)
#
# 1. Starts a bf16 matmul load on the GPU with PyTorch (when it imports), so the clock event
#    counters move (an H200 at full load sits at its power cap).
# 2. Runs `cargo run --release --example nvml_health -- SECONDS GPU`: the same health reader and
#    XID thread the sampler runs, with what each call costs.
# 3. Reads `nvidia-smi -q -d PERFORMANCE,ECC,ROW_REMAPPER` before and after, and checks:
#    - every health reading is present and clean: ECC on, no uncorrected error, no remap pending
#      or failed, retired pages absent (Hopper remaps rows), PCIe replays counted, NVLink absent
#      or every link up, XIDs watched and none came;
#    - each clock event counter (ns) agrees with nvidia-smi's "Clocks Event Reasons Counters"
#      (µs): its growth over the run, and its value at the end against nvidia-smi's read just
#      after, within 2% plus the 2 s the two reads can be apart.
# Prints PASS or FAIL per check and exits 1 when one fails.
set -euo pipefail
secs=${1:-30}
gpu=${2:-0}
here=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'kill "${load:-}" 2>/dev/null || true; rm -rf "$out"' EXIT

cargo build --release --example nvml_health --manifest-path "$here/Cargo.toml" >&2

load=
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    python3 - "$gpu" "$((secs + 15))" <<'PY' &
import sys, time, torch
dev = torch.device(f"cuda:{sys.argv[1]}")
a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
end = time.time() + float(sys.argv[2])
while time.time() < end:
    for _ in range(20):
        a = (a @ a).clamp_(-1, 1)
    torch.cuda.synchronize(dev)
PY
    load=$!
    sleep 5
else
    echo "note: PyTorch with CUDA is missing: the counters are compared at idle (they may stand still)" >&2
fi

nvidia-smi -q -d PERFORMANCE -i "$gpu" > "$out/smi_before.txt"
"$here/target/release/examples/nvml_health" "$secs" "$gpu" > "$out/health.txt"
nvidia-smi -q -d PERFORMANCE,ECC,ROW_REMAPPER,PCIE -i "$gpu" > "$out/smi_after.txt"
grep '^cost ' "$out/health.txt"

python3 - "$out" <<'PY'
import json, re, sys
out = sys.argv[1]
doc = json.loads(open(f"{out}/health.txt").read().strip().splitlines()[-1])
first, last = doc["first"], doc["last"]
failed = []

def check(ok, what):
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)

check(last is not None and first is not None and doc["span_s"] > 0, f"health read twice, {doc['span_s']:.1f} s apart")
check(last.get("ecc_enabled") is True, f"ECC on: {last.get('ecc_enabled')}")
ecc = last.get("ecc", {})
check(ecc.get("volatile_uncorrected") == 0 and ecc.get("aggregate_uncorrected") == 0, f"no uncorrected ECC error: {ecc}")
check("volatile_corrected" in ecc and "aggregate_corrected" in ecc, "corrected ECC counts present")
check(last.get("retired_pages") is None, f"retired pages absent (Hopper remaps rows): {last.get('retired_pages')}")
rows = last.get("remapped_rows") or {}
check(rows.get("pending") is False and rows.get("failed") is False, f"remapped rows present, none pending or failed: {rows}")
check(last.get("pcie_replays") is not None, f"PCIe replays counted: {last.get('pcie_replays')}")
links = last.get("nvlinks", [])
check(all(l.get("active") for l in links), f"NVLink absent or every link up: {len(links)} links")
watch = last.get("xid_watch") or {}
check(watch.get("state") == "watching", f"XIDs watched: {watch}")
check(not doc["xids"], f"no XID came: {doc['xids']}")

def smi_counters(path):
    text = open(path).read()
    section = text.split("Clocks Event Reasons Counters", 1)[1] if "Clocks Event Reasons Counters" in text else ""
    names = {"SW Power Capping": "sw_power_cap", "SW Thermal Slowdown": "sw_thermal",
             "HW Thermal Slowdown": "hw_thermal", "HW Power Braking": "hw_power_brake"}
    found = {}
    for line in section.splitlines()[:8]:
        m = re.match(r"\s*(.+?)\s*:\s*(\d+)\s*us", line)
        if m and m.group(1) in names:
            found[names[m.group(1)]] = int(m.group(2))
    return found

before, after = smi_counters(f"{out}/smi_before.txt"), smi_counters(f"{out}/smi_after.txt")
check(len(after) == 4, f"nvidia-smi shows the four counters: {after}")
c0, c1 = doc.get("counters_start") or {}, doc.get("counters_end") or {}
run_us = doc["counters_span_s"] * 1e6
for reason, us_after in after.items():
    if reason not in c0 or reason not in c1:
        check(False, f"{reason}: gpulse has no counter")
        continue
    ours_us = (c1[reason] - c0[reason]) / 1000.0
    smi_us = us_after - before.get(reason, us_after)
    # nvidia-smi's span holds gpulse's, and is longer by the example's start and nvidia-smi's own
    # run (well under 2 s): the growths agree within that, plus 2%.
    check(ours_us <= smi_us * 1.02 + 50_000 and smi_us - ours_us <= 0.02 * smi_us + 2e6,
          f"{reason}: grew {ours_us / 1e6:.3f} s in gpulse over {run_us / 1e6:.1f} s, {smi_us / 1e6:.3f} s in nvidia-smi")
    # The same counter: nanoseconds here, microseconds in nvidia-smi, read a moment apart.
    check(-50_000 <= us_after - c1[reason] / 1000.0 <= 0.02 * us_after + 2e6,
          f"{reason}: {c1[reason] / 1e9:.3f} s at gpulse's last read, {us_after / 1e6:.3f} s in nvidia-smi just after")
held = doc.get("throttle_held") or {}
print(f"share of the last second each reason held the clocks: {held}")
sys.exit(1 if failed else 0)
PY
