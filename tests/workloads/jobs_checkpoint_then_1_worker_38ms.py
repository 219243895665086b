# Jobs, one per call: python3 jobs_checkpoint_then_1_worker_38ms.py MARKS NAME
#   checkpoint: workloads.py's checkpoint job (busy, a save and a 2.5 s pause every ~8 s of work), 60 s
#   starved_10s: batch 256, 1 worker, 38 ms/sample (a batch about every 9.7 s), 60 s
import os, sys, runpy
marks, name = sys.argv[1], sys.argv[2]
sys.argv = ["workloads.py", marks, "60", "none"]
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
if name == "checkpoint":
    g["checkpoint"]()
else:
    g["run_loader"]("starved_10s", 256, 1, 0.038)
