# A long-period starving job not in the test data: batch 192, 1 worker, 20 ms per sample.
import sys, runpy
marks, dur = sys.argv[1], sys.argv[2]
sys.argv = ["workloads.py", marks, dur, "none"]
g = runpy.run_path("workloads.py")
g["run_loader"]("starved_4s", 192, 1, 0.020)
