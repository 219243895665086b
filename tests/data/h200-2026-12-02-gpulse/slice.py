"""Cut the whole-run recording into one small recording per scenario.

python3 slice.py RUN_DIR   (RUN_DIR holds h200.ndjson.zst and marks.csv)
Writes NAME.ndjson.zst: the recording's header line, then every tick from 1 s before the
scenario's start mark to 1 s after its end mark, unchanged; then copies NAME.smi.csv."""
import io, json, os, shutil, subprocess, sys

run = sys.argv[1]
marks = {}
for line in open(os.path.join(run, "marks.csv")):
    t, what = line.strip().split(",", 1)
    name, ev = what.split(":", 1)
    marks.setdefault(name, {})[ev.split()[0]] = float(t)
raw = subprocess.run(["zstd", "-dc", os.path.join(run, "h200.ndjson.zst")],
                     check=True, capture_output=True).stdout.decode().splitlines()
header, ticks = raw[0], raw[1:]
for name, m in marks.items():
    lo, hi = m["start"] - 1.0, m["end"] + 1.0
    keep = [l for l in ticks if lo <= json.loads(l)["t"] <= hi]
    text = "\n".join([header] + keep) + "\n"
    subprocess.run(["zstd", "-19", "-q", "-f", "-o", f"{name}.ndjson.zst"],
                   input=text.encode(), check=True)
    shutil.copy(os.path.join(run, f"{name}.smi.csv"), f"{name}.smi.csv")
    print(name, len(keep), "ticks")
