# Jobs, each its own process:
#   python3 jobs_random_stalls_transition_6_workers.py MARKS
#   random_stalls2: as random_stalls of jobs_random_stalls_jittery_loader_vit_checkpoint.py with
#           seed 13, 60 s
#   transition3: ResNet-50 batch 128 on data already on the GPU for 20 s, then (onset) from a
#           DataLoader of 4 workers at 10 ms per sample for 30 s, in the same process
#   starved_6w: ResNet-50 batch 128, 6 workers at 15 ms per sample (the six deliver together
#           about every 2 s), 40 s
import random, subprocess, sys, time

MARKS = sys.argv[1]
if len(sys.argv) == 2:
    for job, gap in [("random_stalls2", 8), ("transition3", 8), ("starved_6w", 8)]:
        subprocess.run([sys.executable, __file__, MARKS, job], check=True)
        time.sleep(gap)
    sys.exit(0)

JOB = sys.argv[2]
sys.argv = ["workloads.py", MARKS, "40", "none"]
import os, runpy
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step = g["torch"], g["dev"], g["mark"], g["step"]
DataLoader, SlowDS = g["DataLoader"], g["SlowDS"]


def on_gpu_data(bs):
    x = torch.randn(bs, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (bs,), device=dev)
    return x, y


def loader_steps(label, m, opt, crit, it, secs):
    t0, n, wait = time.time(), 0, 0.0
    while time.time() - t0 < secs:
        w0 = time.time()
        x, y = next(it)
        wait += time.time() - w0
        step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
        n += 1
    torch.cuda.synchronize()
    return n, wait / (time.time() - t0)


if JOB == "random_stalls2":
    rng = random.Random(13)
    m, opt, crit = g["resnet"]()
    x, y = on_gpu_data(256)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("random_stalls2:start")
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
    mark(f"random_stalls2:end steps={n} stalls={stalls} stall_share={stalled / total:.2f}")
elif JOB == "transition3":
    m, opt, crit = g["resnet"]()
    dl = DataLoader(SlowDS(0.010), batch_size=128, num_workers=4, prefetch_factor=2)
    x, y = on_gpu_data(128)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("transition3:start")
    t0, n = time.time(), 0
    while time.time() - t0 < 20:
        step(m, opt, crit, x, y)
        n += 1
        if n % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    it = iter(dl)  # the workers start now: the first batches take a worker's whole batch time
    mark(f"transition3:onset steps={n}")
    k, share = loader_steps("transition3", m, opt, crit, it, 30)
    mark(f"transition3:end steps={k} wait_share={share:.2f}")
elif JOB == "starved_6w":
    m, opt, crit = g["resnet"]()
    dl = DataLoader(SlowDS(0.015), batch_size=128, num_workers=6, prefetch_factor=2)
    it = iter(dl)
    x, y = next(it)
    step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
    torch.cuda.synchronize()
    mark("starved_6w:start")
    k, share = loader_steps("starved_6w", m, opt, crit, it, 40)
    mark(f"starved_6w:end steps={k} wait_share={share:.2f}")
