#!/usr/bin/env python3
"""Several labelled jobs one after another in ONE Python process, as a notebook or a sweep runs them.

    python3 jobs_in_one_process.py OUTDIR [JOB ...]
    python3 jobs_in_one_process.py --list

The process keeps its CUDA context, its memory and its PID from the first job to the last, so a
monitor sees no process change between jobs: only the work changes. Each job writes the marks and
step timings of `labelled_jobs.py` (OUTDIR/marks.csv, OUTDIR/<job>.steps.csv), whose module doc
defines them; besides `start`, `onset` and `end`, a job here may write:
    warmup   the job began working on the GPU (model built, first steps, autotuning); its
             labelled window opens later, at `start`
    gap      inside the window: the job stops using the GPU for `seconds`, holding its memory
    epoch    inside the window: a new DataLoader epoch begins, its workers started anew
Jobs never change the GPU's clocks, power limit or modes. The exit status is 0 when every job
reached its end mark, else 1.
"""
import functools
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import labelled_jobs as lj  # noqa: E402

DEV = "cuda"


def gpu_images(batch, size=224):
    torch = lj.torch
    x = torch.randn(batch, 3, size, size, device=DEV).contiguous(memory_format=torch.channels_last)
    return x, torch.randint(0, 1000, (batch,), device=DEV)


def bf16_step(model):
    torch = lj.torch
    model = model.to(DEV).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return lj.train_step(model, opt, lj.image_loss, autocast=torch.bfloat16)


def jagged_start_up(step, batches, pause_s):
    """A notebook's first cells: a few steps at each batch size (cuDNN autotunes each shape),
    then a pause for the person reading the output."""
    for batch in batches:
        x, y = gpu_images(batch)
        for _ in range(3):
            step(x, y)
        lj.torch.cuda.synchronize()
        time.sleep(pause_s)


def convnext_healthy_after_jagged_start_up(ctx):
    """ConvNeXt-Tiny bf16 b128 on GPU data: a ~12 s jagged start-up (window opens after it), 45 s."""
    import torchvision
    ctx.mark("warmup", model="convnext_tiny")
    step = bf16_step(torchvision.models.convnext_tiny(num_classes=1000))
    jagged_start_up(step, [16, 32, 64, 96, 128, 128], 1.2)
    batch = ctx.batch(128)
    x, y = gpu_images(batch)
    step_s = lj.timed(lambda: step(x, y), 2, 5)
    ctx.start(model="convnext_tiny", precision="bf16-autocast", batch=batch, data="gpu-resident",
              warm_step_s=step_s)
    lj.run_gpu_resident(ctx, lambda: step(x, y), 45, step_s)
    ctx.end()
    return step


def idle_holding_memory(ctx, seconds=12.0):
    """Nothing runs on the GPU for `seconds`; the process keeps its context and the last model."""
    held = lj.torch.cuda.memory_allocated() / 2**30
    ctx.start(held_gib=held, planned_s=seconds)
    time.sleep(seconds)
    ctx.steps.pause(0.0, "stall")
    ctx.end()


def vit_healthy_after_idle(ctx):
    """ViT-B/16 bf16 b128 on GPU data right after an idle stretch of the same process, 45 s."""
    import torchvision
    ctx.mark("warmup", model="vit_b_16")
    step = bf16_step(torchvision.models.vit_b_16(num_classes=1000))
    batch = ctx.batch(128)
    x, y = gpu_images(batch)
    step_s = lj.timed(lambda: step(x, y), 3, 5)
    ctx.start(model="vit_b_16", precision="bf16-autocast", batch=batch, data="gpu-resident",
              warm_step_s=step_s)
    lj.run_gpu_resident(ctx, lambda: step(x, y), 45, step_s)
    ctx.end()


def spin(ctx, seconds):
    """torch.cuda._sleep in 50 ms chunks: utilization 100%, SM activity near 0."""
    torch = lj.torch
    torch.cuda._sleep(1_000_000)
    before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    before.record()
    torch.cuda._sleep(100_000_000)
    after.record()
    after.synchronize()
    cycles_per_s = 100_000_000 / (before.elapsed_time(after) / 1e3)
    chunk = int(cycles_per_s * 0.05)

    def four_chunks():
        for _ in range(4):
            torch.cuda._sleep(chunk)

    ctx.start(kernel="torch.cuda._sleep", chunk_ms=50, spin_clock_mhz=cycles_per_s / 1e6)
    lj.run_gpu_resident(ctx, four_chunks, seconds, 0.2, sync_span_s=1.0)
    ctx.end()


def checkpoint_every_10s(ctx):
    """ResNet-50 bf16 b256 on GPU data, a ~3 s checkpoint pause (copy, save, fsync) every 10 s, 45 s."""
    torch = lj.torch
    batch, period_s, pause_s = ctx.batch(256), 10.0, 3.0
    path = f"/tmp/one-process-checkpoint-{os.getpid()}.pt"
    model, opt = lj.resnet50()
    step = lj.train_step(model, opt, lj.image_loss, autocast=torch.bfloat16)
    x, y = gpu_images(batch)
    step_s = lj.timed(lambda: step(x, y), 5, 10)
    ctx.start(model="resnet50", precision="bf16-autocast", batch=batch, data="gpu-resident",
              period_s=period_s, pause_s=pause_s, warm_step_s=step_s)
    next_pause = time.time() + period_s

    def maybe_checkpoint():
        nonlocal next_pause
        if time.time() < next_pause:
            return
        ctx.steps.flush()
        began = time.time()
        state = lj.checkpoint_to_cpu({"model": model.state_dict(), "optimizer": opt.state_dict()})
        copied = time.time()
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        time.sleep(max(0.0, began + pause_s - time.time()))
        ctx.steps.pause(copied - began, "checkpoint")
        next_pause += period_s

    try:
        lj.run_gpu_resident(ctx, lambda: step(x, y), 45, step_s, maybe_checkpoint)
    finally:
        if os.path.exists(path):
            os.remove(path)
    ctx.end()


def healthy_with_idle_gaps(ctx):
    """ResNet-50 bf16 b256 on GPU data: 12 s training, 8 s gap, 12 s, 5 s gap, 12 s, 15 s gap, 10 s.
    The gaps stand for a host-side pause (logging to a slow store, an eval on the CPU); memory stays held."""
    torch = lj.torch
    batch = ctx.batch(256)
    model, opt = lj.resnet50()
    step = lj.train_step(model, opt, lj.image_loss, autocast=torch.bfloat16)
    x, y = gpu_images(batch)
    step_s = lj.timed(lambda: step(x, y), 5, 10)
    ctx.start(model="resnet50", precision="bf16-autocast", batch=batch, data="gpu-resident",
              warm_step_s=step_s, gaps_s="8;5;15")
    for train_s, gap_s in ((12, 8), (12, 5), (12, 15), (10, 0)):
        lj.run_gpu_resident(ctx, lambda: step(x, y), train_s, step_s)
        if gap_s:
            ctx.mark("gap", seconds=gap_s)
            time.sleep(gap_s)
            ctx.steps.pause(0.0, "stall")
    ctx.end()


def slow_worker_start(seconds, worker_id):
    """A worker that opens its dataset (index files, a connection) before its first sample."""
    time.sleep(seconds)


def train_eval_epochs_workers_respawn(ctx):
    """ResNet-50 bf16 b256 from a DataLoader with persistent_workers=False: every epoch (train
    ~14 s, eval ~6 s, train, eval, train) starts 8 new workers that each spend 3 s opening the
    dataset, so the GPU waits ~4 s at every epoch's start; within an epoch the loader keeps up."""
    torch = lj.torch
    from torch.utils.data import DataLoader
    batch, workers, cost_s, open_s = ctx.batch(256), 8, 0.002, 3.0
    model, opt = lj.resnet50()
    step = lj.train_step(model, opt, lj.image_loss, autocast=torch.bfloat16)
    step_s = lj.loader_step_time(step, batch, pin=True)

    def evaluate(x, y):
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            model(x)

    def epoch_loader():
        return DataLoader(lj.DecodedImages(cost_s), batch_size=batch, num_workers=workers,
                          pin_memory=True, persistent_workers=False, prefetch_factor=2,
                          worker_init_fn=functools.partial(slow_worker_start, open_s))

    warm = iter(epoch_loader())
    step(*lj.to_gpu(next(warm)))
    torch.cuda.synchronize()
    del warm
    ctx.start(model="resnet50", precision="bf16-autocast", batch=batch, workers=workers,
              cost_ms=cost_s * 1e3, worker_open_s=open_s, persistent_workers=False, warm_step_s=step_s)
    for number, (kind, seconds) in enumerate((("train", 14), ("eval", 6), ("train", 14), ("eval", 6),
                                              ("train", 14))):
        ctx.mark("epoch", number=number, kind=kind)
        batches = iter(epoch_loader())
        work = step if kind == "train" else evaluate
        lj.run_loader(ctx, batches, work, seconds)
        del batches
    ctx.end()


JOBS = {
    "convnext-tiny-healthy-after-jagged-start-up": (convnext_healthy_after_jagged_start_up, 75),
    "idle-12s-holding-memory": (idle_holding_memory, 15),
    "vit-b16-healthy-after-idle": (vit_healthy_after_idle, 60),
    "spin-kernel-25s": (functools.partial(spin, seconds=25), 30),
    "resnet50-checkpoint-every-10s": (checkpoint_every_10s, 55),
    "spin-kernel-after-checkpoint-cadence": (functools.partial(spin, seconds=25), 30),
    "resnet50-healthy-with-idle-gaps-8s-5s-15s": (healthy_with_idle_gaps, 80),
    "resnet50-train-eval-epochs-workers-respawn": (train_eval_epochs_workers_respawn, 75),
}


def main(argv):
    if argv[:1] == ["--list"]:
        for name, (_, seconds) in JOBS.items():
            print(f"{name:48} ~{seconds} s")
        print(f"total ~{sum(s for _, s in JOBS.values())} s")
        return 0
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    outdir, names = argv[0], argv[1:] or list(JOBS)
    unknown = [n for n in names if n not in JOBS]
    if unknown:
        print(f"unknown jobs: {' '.join(unknown)}; --list shows them", file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    lj.load_torch()
    lj.torch.backends.cudnn.benchmark = True
    failed = 0
    time.sleep(lj.GAP_S)
    for name in names:
        ctx = lj.Ctx(outdir, name, 1.0)
        try:
            JOBS[name][0](ctx)
        except Exception as error:  # noqa: BLE001 - one job's failure must not end the process
            traceback.print_exc()
            if ctx.started:
                ctx.steps.write()
            ctx.mark("error", type=type(error).__name__, detail=(str(error).splitlines() or [""])[0])
            failed += 1
    time.sleep(lj.GAP_S)
    return 1 if failed else 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)
