"""Cut a whole-run recording into one small recording per scenario.

python3 slice.py RUN_DIR [RECORDING [SMI_CSV]]
RUN_DIR holds the whole-run recording (RECORDING, default h200.ndjson.zst) and marks.csv.
Writes NAME.ndjson.zst: the recording's header line, then every tick from 1 s before the
scenario's start mark to 1 s after its end mark (a scenario without an end mark runs to the end
of the recording), unchanged. NAME.smi.csv: copied from RUN_DIR/NAME.smi.csv when the run has
one per scenario, else the rows of the whole-run nvidia-smi log SMI_CSV (its timestamps are UTC)
in the same span, with its header."""
import datetime, json, os, shutil, subprocess, sys

run = sys.argv[1]
recording = sys.argv[2] if len(sys.argv) > 2 else "h200.ndjson.zst"
smi = sys.argv[3] if len(sys.argv) > 3 else None
marks = {}
for line in open(os.path.join(run, "marks.csv")):
    t, what = line.strip().split(",", 1)
    name, ev = what.split(":", 1)
    marks.setdefault(name, {})[ev.split()[0]] = float(t)
raw = subprocess.run(["zstd", "-dc", os.path.join(run, recording)],
                     check=True, capture_output=True).stdout.decode().splitlines()
header, ticks = raw[0], raw[1:]
last = json.loads(ticks[-1])["t"]


def smi_time(row):
    stamp = row.split(",", 1)[0].strip()
    dt = datetime.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f")
    return dt.replace(tzinfo=datetime.timezone.utc).timestamp()


for name, m in marks.items():
    lo, hi = m["start"] - 1.0, m.get("end", last) + 1.0
    keep = [l for l in ticks if lo <= json.loads(l)["t"] <= hi]
    text = "\n".join([header] + keep) + "\n"
    subprocess.run(["zstd", "-19", "-q", "-f", "-o", f"{name}.ndjson.zst"],
                   input=text.encode(), check=True)
    per_scenario = os.path.join(run, f"{name}.smi.csv")
    if os.path.exists(per_scenario):
        shutil.copy(per_scenario, f"{name}.smi.csv")
    else:
        rows = open(os.path.join(run, smi)).read().splitlines()
        cut = [rows[0]] + [r for r in rows[1:] if r.strip() and lo <= smi_time(r) <= hi]
        open(f"{name}.smi.csv", "w").write("\n".join(cut) + "\n")
    print(name, len(keep), "ticks")
