# Jobs, each its own process:  python3 jobs_steady_10_workers_6ms_1_worker_24ms.py MARKS
#   steady: ResNet-50 batch 256 on data already on the GPU, 230 s (the dashboard's CPU is
#           measured beside it)
#   slight_starve: ResNet-50 batch 256, 10 DataLoader workers at 6 ms per sample (each worker's
#           batch ~1.5 s; ten of them deliver a batch every ~0.15 s against a ~0.2 s step:
#           a loader only slightly too slow, if at all), 50 s
#   long_period: ResNet-50 batch 256, 1 worker at 24 ms per sample (a batch every ~6.1 s, the
#           step ~0.25 s: a badly starved job with a long period), 60 s
#   then_idle: 10 s of nothing on the GPU after the last job
# Each starving job's end mark carries the share of its time spent waiting for the next batch.
import subprocess, sys, time

MARKS = sys.argv[1]
if len(sys.argv) == 2:
    for job, gap in [("steady", 5), ("slight_starve", 5), ("long_period", 10)]:
        subprocess.run([sys.executable, __file__, MARKS, job], check=True)
        time.sleep(gap)
    sys.exit(0)

JOB = sys.argv[2]
sys.argv = ["workloads.py", MARKS, "40", "none"]
import os, runpy
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step, nn = g["torch"], g["dev"], g["mark"], g["step"], g["nn"]
DataLoader, SlowDS = g["DataLoader"], g["SlowDS"]


def starving(label, bs, workers, cost, secs):
    m, opt, crit = g["resnet"]()
    dl = DataLoader(SlowDS(cost), batch_size=bs, num_workers=workers, prefetch_factor=2)
    it = iter(dl)
    x, y = next(it)
    step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
    torch.cuda.synchronize()
    mark(f"{label}:start")
    t0, n, wait = time.time(), 0, 0.0
    while time.time() - t0 < secs:
        w0 = time.time()
        x, y = next(it)
        wait += time.time() - w0
        step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
        n += 1
    torch.cuda.synchronize()
    total = time.time() - t0
    mark(f"{label}:end steps={n} wait_share={wait / total:.2f}")


if JOB == "steady":
    m, opt, crit = g["resnet"]()
    x = torch.randn(256, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device=dev)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("steady:start")
    t0, n = time.time(), 0
    while time.time() - t0 < 230:
        step(m, opt, crit, x, y)
        n += 1
        if n % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    mark(f"steady:end steps={n}")
elif JOB == "slight_starve":
    starving("slight_starve", 256, 10, 0.006, 50)
elif JOB == "long_period":
    starving("long_period", 256, 1, 0.024, 60)
