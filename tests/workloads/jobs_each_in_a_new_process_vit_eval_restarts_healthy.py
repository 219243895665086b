# Jobs, each its own process, so its memory is freed when it ends
# and the next job starts with a new context:  python3 jobs_each_in_a_new_process_vit_eval_restarts_healthy.py MARKS
#   vit_starved: ViT-B/16 batch 128, bf16, 6 DataLoader workers at 25 ms per sample (each
#                worker's batch takes ~3.2 s; the six deliver together), 40 s; then the process
#                exits and the GPU holds no context for ~8 s
#   eval_cadence: ResNet-50 batch 256 on data already on the GPU, with an evaluation pass every
#                ~9 s whose CPU side (metrics, logging) keeps the GPU idle ~3 s, 55 s
#   restart_a, restart_b: the same starving job (ResNet-50 batch 128, 2 workers at 30 ms per
#                sample: a pair of batches about every 3.8 s) run twice, 30 s each, 5 s apart
#   exit_then_healthy: ResNet-50 batch 128, 3 workers at 25 ms per sample for 30 s, then the
#                process exits and a healthy job (data on the GPU) starts 2 s later for 30 s
# Each starving job's end mark carries the share of its time spent waiting for the next batch.
import os, subprocess, sys, time

MARKS = sys.argv[1]
if len(sys.argv) == 2:
    for job, gap in [("vit_starved", 8), ("eval_cadence", 5), ("restart_a", 5), ("restart_b", 5),
                     ("exit_starved", 2), ("then_healthy", 3)]:
        subprocess.run([sys.executable, __file__, MARKS, job], check=True)
        time.sleep(gap)
    sys.exit(0)

JOB = sys.argv[2]
sys.argv = ["workloads.py", MARKS, "40", "none"]
import runpy
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step, nn = g["torch"], g["dev"], g["mark"], g["step"], g["nn"]
DataLoader, SlowDS = g["DataLoader"], g["SlowDS"]
import torchvision


def starving(label, model, bs, workers, cost, secs):
    m, opt, crit = model()
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


def vit():
    m = torchvision.models.vit_b_16(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    return m, torch.optim.AdamW(m.parameters(), lr=1e-4), nn.CrossEntropyLoss()


if JOB == "vit_starved":
    starving("vit_starved", vit, 128, 6, 0.025, 40)
elif JOB in ("restart_a", "restart_b"):
    starving(JOB, g["resnet"], 128, 2, 0.030, 30)
elif JOB == "exit_starved":
    starving("exit_starved", g["resnet"], 128, 3, 0.025, 30)
elif JOB == "then_healthy":
    m, opt, crit = g["resnet"]()
    x = torch.randn(256, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device=dev)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("then_healthy:start")
    t0, n = time.time(), 0
    while time.time() - t0 < 30:
        step(m, opt, crit, x, y)
        n += 1
        if n % 10 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    mark(f"then_healthy:end steps={n}")
elif JOB == "eval_cadence":
    m, opt, crit = g["resnet"]()
    x = torch.randn(256, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (256,), device=dev)
    step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("eval_cadence:start")
    t0, last, n, evals = time.time(), time.time(), 0, 0
    while time.time() - t0 < 55:
        step(m, opt, crit, x, y)
        n += 1
        if n % 10 == 0:
            torch.cuda.synchronize()
        if time.time() - last > 9:
            with torch.no_grad():
                for _ in range(3):
                    m(x[:64])
            torch.cuda.synchronize()
            time.sleep(3.0)  # stands for the evaluation's host side: metrics, logging
            evals += 1
            last = time.time()
    torch.cuda.synchronize()
    mark(f"eval_cadence:end steps={n} evals={evals}")
