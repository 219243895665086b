# A long-period starving job: batch 192, 1 worker, 20 ms per sample.
import os, sys, runpy
marks, dur = sys.argv[1], sys.argv[2]
sys.argv = ["workloads.py", marks, dur, "none"]
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
g["run_loader"]("starved_4s", 192, 1, 0.020)
