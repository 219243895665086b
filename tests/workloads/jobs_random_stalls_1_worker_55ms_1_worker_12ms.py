# Jobs, each its own process:
#   python3 jobs_random_stalls_1_worker_55ms_1_worker_12ms.py MARKS
#   random_stalls3: ResNet-50 batch 256 on data already on the GPU, host stalls at random moments
#           (exponential spacing, mean 2.5 s of training, 0.3-1.6 s each, seed 14), 60 s
#   slow_7s: ResNet-50 batch 128 from one DataLoader worker at 55 ms per sample (a batch every
#           ~7 s), 60 s
#   starved_1w: ResNet-50 batch 128 from one worker at 12 ms per sample (a batch every ~1.5 s), 45 s
import random, subprocess, sys, time

MARKS = sys.argv[1]
if len(sys.argv) == 2:
    for job, gap in [("random_stalls3", 8), ("slow_7s", 8), ("starved_1w", 8)]:
        subprocess.run([sys.executable, __file__, MARKS, job], check=True)
        time.sleep(gap)
    sys.exit(0)

JOB = sys.argv[2]
sys.argv = ["workloads.py", MARKS, "40", "none"]
import os, runpy
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step = g["torch"], g["dev"], g["mark"], g["step"]
DataLoader, SlowDS = g["DataLoader"], g["SlowDS"]


def loader_job(label, cost, secs):
    m, opt, crit = g["resnet"]()
    dl = DataLoader(SlowDS(cost), batch_size=128, num_workers=1, prefetch_factor=2)
    it = iter(dl)
    x, y = next(it)
    step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
    torch.cuda.synchronize()
    mark(f"{label}:start")
    t0, n, wait, arrivals = time.time(), 0, 0.0, []
    while time.time() - t0 < secs:
        w0 = time.time()
        x, y = next(it)
        arrivals.append(time.time())
        wait += time.time() - w0
        step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
        n += 1
    torch.cuda.synchronize()
    total = time.time() - t0
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    per = sorted(gaps)[len(gaps) // 2] if gaps else 0.0
    mark(f"{label}:end steps={n} wait_share={wait / total:.2f} batch_spacing_median={per:.2f}")


if JOB == "random_stalls3":
    rng = random.Random(14)
    m, opt, crit = g["resnet"]()
    x = torch.randn(256, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device=dev)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("random_stalls3:start")
    t0, n, stalls, stalled = time.time(), 0, 0, 0.0
    next_stall = t0 + rng.expovariate(1 / 2.5)
    while time.time() - t0 < 60:
        step(m, opt, crit, x, y)
        n += 1
        if n % 4 == 0:
            torch.cuda.synchronize()
            if time.time() >= next_stall:
                d = rng.uniform(0.3, 1.6)
                time.sleep(d)
                stalls += 1
                stalled += d
                next_stall = time.time() + rng.expovariate(1 / 2.5)
    torch.cuda.synchronize()
    total = time.time() - t0
    mark(f"random_stalls3:end steps={n} stalls={stalls} stall_share={stalled / total:.2f}")
elif JOB == "slow_7s":
    loader_job("slow_7s", 0.055, 60)
elif JOB == "starved_1w":
    loader_job("starved_1w", 0.012, 45)
