# Jobs, each its own process:  python3 jobs_random_stalls_jittery_loader_vit_checkpoint.py MARKS
#   random_stalls: ResNet-50 batch 256 on data already on the GPU; the host stalls at random
#           moments (exponential spacing, mean 2.5 s of training between stalls; each stall
#           0.3-1.6 s, uniform), standing for storage or logging hiccups with no cadence, 90 s
#   jitter_loader: ResNet-50 batch 128, 4 DataLoader workers whose per-sample cost varies
#           (log-normal, median 8 ms, sigma 0.6: some images decode slowly), 50 s
#   vit_checkpoint: ViT-B/16 batch 128, AdamW, on data already on the GPU, a torch.save of the
#           model and optimizer (about 1 GB) to local disk every ~12 s, 60 s
# End marks carry the measured stall / wait / save shares.
import random, subprocess, sys, time

MARKS = sys.argv[1]
if len(sys.argv) == 2:
    for job, gap in [("random_stalls", 8), ("jitter_loader", 8), ("vit_checkpoint", 8)]:
        subprocess.run([sys.executable, __file__, MARKS, job], check=True)
        time.sleep(gap)
    sys.exit(0)

JOB = sys.argv[2]
sys.argv = ["workloads.py", MARKS, "40", "none"]
import os, runpy
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step, nn = g["torch"], g["dev"], g["mark"], g["step"], g["nn"]
DataLoader, Dataset = g["DataLoader"], g["Dataset"]
import torchvision


class JitterDS(Dataset):
    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        time.sleep(random.lognormvariate(-4.828, 0.6))  # median e^-4.828 = 8 ms
        return torch.randn(3, 224, 224), i % 1000


def on_gpu_data(bs):
    x = torch.randn(bs, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (bs,), device=dev)
    return x, y


if JOB == "random_stalls":
    rng = random.Random(12)
    m, opt, crit = g["resnet"]()
    x, y = on_gpu_data(256)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("random_stalls:start")
    t0, n, stalls, stalled = time.time(), 0, 0, 0.0
    next_stall = t0 + rng.expovariate(1 / 2.5)
    while time.time() - t0 < 90:
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
    mark(f"random_stalls:end steps={n} stalls={stalls} stall_share={stalled / total:.2f}")
elif JOB == "jitter_loader":
    m, opt, crit = g["resnet"]()
    dl = DataLoader(JitterDS(), batch_size=128, num_workers=4, prefetch_factor=2)
    it = iter(dl)
    x, y = next(it)
    step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
    torch.cuda.synchronize()
    mark("jitter_loader:start")
    t0, n, wait = time.time(), 0, 0.0
    while time.time() - t0 < 50:
        w0 = time.time()
        x, y = next(it)
        wait += time.time() - w0
        step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
        n += 1
    torch.cuda.synchronize()
    total = time.time() - t0
    mark(f"jitter_loader:end steps={n} wait_share={wait / total:.2f}")
elif JOB == "vit_checkpoint":
    m = torchvision.models.vit_b_16(num_classes=1000).to(dev)
    opt, crit = torch.optim.AdamW(m.parameters(), lr=1e-4), nn.CrossEntropyLoss()
    x = torch.randn(128, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (128,), device=dev)
    for _ in range(3):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("vit_checkpoint:start")
    t0, last, n, saves, saving = time.time(), time.time(), 0, 0, 0.0
    while time.time() - t0 < 60:
        step(m, opt, crit, x, y)
        n += 1
        if n % 5 == 0:
            torch.cuda.synchronize()
        if time.time() - last > 12:
            torch.cuda.synchronize()
            s0 = time.time()
            torch.save({"m": m.state_dict(), "o": opt.state_dict()}, "/tmp/vit_ckpt.pt")
            saving += time.time() - s0
            saves += 1
            last = time.time()
    torch.cuda.synchronize()
    total = time.time() - t0
    mark(f"vit_checkpoint:end steps={n} saves={saves} save_share={saving / total:.2f}")
