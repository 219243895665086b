# starved_5s: batch 256, 1 worker, 20 ms per sample (one batch per ~5.6 s once the worker runs).
import os, sys, runpy
marks, dur = sys.argv[1], sys.argv[2]
sys.argv = ["workloads.py", marks, dur, "none"]
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
g["run_loader"]("starved_5s", 256, 1, 0.020)
