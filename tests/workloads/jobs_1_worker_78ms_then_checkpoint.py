# Jobs, each its own process:
#   python3 jobs_1_worker_78ms_then_checkpoint.py MARKS
#   slow_10s: ResNet-50 batch 128 from one DataLoader worker at 78 ms per sample (a batch every
#           ~10 s), 60 s
#   checkpoint: workloads.py's checkpoint (ResNet-50 batch 256 on data on the GPU, a torch.save
#           and a 2.5 s pause every ~8 s of training), 60 s
import subprocess, sys, time

MARKS = sys.argv[1]
if len(sys.argv) == 2:
    for job, gap in [("slow_10s", 8), ("checkpoint", 8)]:
        subprocess.run([sys.executable, __file__, MARKS, job], check=True)
        time.sleep(gap)
    sys.exit(0)

JOB = sys.argv[2]
sys.argv = ["workloads.py", MARKS, "60", "none"]
import os, runpy
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step = g["torch"], g["dev"], g["mark"], g["step"]
DataLoader, SlowDS = g["DataLoader"], g["SlowDS"]

if JOB == "slow_10s":
    m, opt, crit = g["resnet"]()
    dl = DataLoader(SlowDS(0.078), batch_size=128, num_workers=1, prefetch_factor=2)
    it = iter(dl)
    x, y = next(it)
    step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
    torch.cuda.synchronize()
    mark("slow_10s:start")
    t0, n, wait, arrivals = time.time(), 0, 0.0, []
    while time.time() - t0 < 60:
        w0 = time.time()
        x, y = next(it)
        arrivals.append(time.time())
        wait += time.time() - w0
        step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
        n += 1
    torch.cuda.synchronize()
    total = time.time() - t0
    gaps = sorted(b - a for a, b in zip(arrivals, arrivals[1:]))
    per = gaps[len(gaps) // 2] if gaps else 0.0
    mark(f"slow_10s:end steps={n} wait_share={wait / total:.2f} batch_spacing_median={per:.2f}")
elif JOB == "checkpoint":
    g["checkpoint"]()
