#!/usr/bin/env python3
"""PyTorch jobs with a known behaviour, each recording its own step timings as ground truth.

    python3 labelled_jobs.py OUTDIR JOB [JOB ...] [--budget SECONDS]
    python3 labelled_jobs.py --list

Needs python3 with torch and torchvision and one NVIDIA GPU. Each job runs in its own Python
process, so a crash or a hang in one leaves the others to run; GAP_S of idle GPU comes before the
first job and after each. A job warms up (cuDNN autotuning, first steps, a DataLoader's first
batches) before its `start` mark, so the labelled window holds steady behaviour. A job still
running MARGIN_S after its planned start-up and window is stopped. With --budget, a job that would
end later than that many seconds after the driver started is skipped. The exit status is 0 when
every job reached its `end` mark, else 1. Jobs never change the GPU's clocks, power limit or modes.

OUTDIR/marks.csv, appended, one line per event: `unix_time,job:event key=value ...`
    start    the labelled window opens; the job's settings (batch, workers, precision, ...)
    onset    the behaviour changes inside the window; statistics of the part before it
    end      the window closes; statistics of the part since `start` (or since `onset`)
    retry    reason=oom: the job ran out of GPU memory and starts again with half its batch
    error    type=... detail=...: the job failed (or exit=N / timeout_s=N when it gave no reason)
    skipped  reason=budget
  Statistics: window_s; steps (train steps); wait_share (train steps' wait_s / window);
  pause_share (rows other than train / window); lost_share (the two together);
  step_median, compute_median, wait_median (seconds, train steps); batch_spacing_median (seconds
  between batches in hand); pauses and pause_median; job-specific figures (throughput, cost).

OUTDIR/<job>.steps.csv, one row per step of the labelled window: `t_start,t_end,wait_s,compute_s,kind`
  Unix times. The rows tile the window: each row starts where the previous one ended, and
  t_end - t_start = wait_s + compute_s.
  kind=train: wait_s is the time the GPU had nothing of this step because the trainer was blocked
    on its next batch (DataLoader) or on the host; compute_s runs from the batch in hand to the
    step's GPU work done. Loader jobs synchronize at each step's end and use the host clock. Jobs
    on GPU-resident data record a CUDA event before and after each step and synchronize every
    SYNC_SPAN_S or so; their times are the GPU's, placed on the unix clock by an event recorded
    right after a synchronize.
  kind=checkpoint: a pause to save the model; compute_s is the device-to-host copy of the state,
    wait_s the host-only rest (serialisation, fsync, slow storage).
  Other kinds a reader should accept: eval (an evaluation pass), stall (a host pause).
"""
import functools
import gc
import os
import signal
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Callable

GAP_S = 3.0
MARGIN_S = 90.0
SYNC_SPAN_S = 0.25
PROGRESS_S = 5.0
DEV = "cuda"
torch = nn = F = None  # imported in the job's process only, so --list needs no torch


def load_torch():
    global torch, nn, F
    import torch as torch_module
    torch, nn, F = torch_module, torch_module.nn, torch_module.nn.functional


def field(value):
    """A mark's value: no spaces or commas, so `key=value` pairs and the CSV stay parseable."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return "_".join(str(value).replace(",", ";").split())[:200]


class Marks:
    def __init__(self, outdir, job):
        self.path, self.job = os.path.join(outdir, "marks.csv"), job

    def __call__(self, event, **values):
        pairs = " ".join(f"{k}={field(v)}" for k, v in values.items() if v is not None)
        label = f"{self.job}:{event}" + (f" {pairs}" if pairs else "")
        with open(self.path, "a") as f:
            f.write(f"{time.time():.3f},{label}\n")
        print(f"{time.strftime('%H:%M:%S')} {label}", flush=True)


def median(values):
    return statistics.median(values) if values else None


class StepLog:
    """The labelled window's steps as rows that tile it (see the module doc)."""

    def __init__(self, path, job):
        self.path, self.job, self.rows, self.pending = path, job, [], []
        self.segment, self.last_end, self.anchor, self.printed = 0, None, None, 0.0

    def open(self):
        torch.cuda.synchronize()
        self._anchor()
        self.last_end = self.printed = self.anchor[1]

    def _anchor(self):
        event = torch.cuda.Event(enable_timing=True)
        host = time.time()
        event.record()
        event.synchronize()
        self.anchor = (event, host)

    def _unix(self, event):
        return self.anchor[1] + self.anchor[0].elapsed_time(event) / 1e3

    def gpu_step(self, work):
        """Enqueues one step between two CUDA events; flush() turns them into rows."""
        before, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        before.record()
        work()
        after.record()
        self.pending.append((before, after))

    def flush(self):
        torch.cuda.synchronize()
        for before, after in self.pending:
            began = max(self._unix(before), self.last_end)
            self._row(self.last_end, max(self._unix(after), began), began - self.last_end, "train")
        self.pending.clear()
        self._anchor()

    def host_step(self, next_batch, work):
        """Waits for a batch, runs the step and synchronizes: host-clock times."""
        batch = next_batch()
        ready = max(time.time(), self.last_end)
        work(batch)
        torch.cuda.synchronize()
        self._row(self.last_end, time.time(), ready - self.last_end, "train")

    def pause(self, gpu_s, kind):
        now = time.time()
        self._row(self.last_end, now, max(0.0, now - self.last_end - gpu_s), kind)

    def _row(self, start, end, wait_s, kind):
        self.rows.append((start, end, wait_s, end - start - wait_s, kind))
        self.last_end = end
        if end - self.printed >= PROGRESS_S:
            self.printed = end
            done = self.rows[self.segment:]
            waited = sum(r[2] for r in done if r[4] == "train")
            span = end - done[0][0]
            print(f"{time.strftime('%H:%M:%S')} {self.job} +{span:.0f}s steps={len(done)} "
                  f"wait_share={waited / max(span, 1e-9):.2f}", flush=True)

    def close_segment(self):
        """Statistics of the rows since the window opened or the last onset."""
        if self.pending:
            self.flush()
        rows, self.segment = self.rows[self.segment:], len(self.rows)
        if not rows:
            return {"steps": 0}
        window = rows[-1][1] - rows[0][0]
        train = [r for r in rows if r[4] == "train"]
        pauses = [r[1] - r[0] for r in rows if r[4] != "train"]
        ready = [r[0] + r[2] for r in train]
        wait_share = sum(r[2] for r in train) / window
        return {"window_s": window, "steps": len(train), "wait_share": wait_share,
                "pause_share": sum(pauses) / window, "lost_share": wait_share + sum(pauses) / window,
                "step_median": median([r[1] - r[0] for r in train]),
                "compute_median": median([r[3] for r in train]),
                "wait_median": median([r[2] for r in train]),
                "batch_spacing_median": median([b - a for a, b in zip(ready, ready[1:])]),
                "pauses": len(pauses) or None, "pause_median": median(pauses)}

    def write(self):
        with open(self.path, "w") as f:
            f.write("t_start,t_end,wait_s,compute_s,kind\n")
            for start, end, wait_s, compute_s, kind in self.rows:
                f.write(f"{start:.6f},{end:.6f},{wait_s:.6f},{compute_s:.6f},{kind}\n")


class Ctx:
    """What a job needs: its marks, its step log, and the batch scale (halved after an OOM)."""

    def __init__(self, outdir, job, scale):
        self.mark, self.scale, self.started = Marks(outdir, job), scale, False
        self.steps = StepLog(os.path.join(outdir, f"{job}.steps.csv"), job)

    def batch(self, n):
        return max(1, int(n * self.scale))

    def start(self, **values):
        self.steps.open()
        self.started = True
        self.mark("start", torch=torch.__version__, gpu=torch.cuda.get_device_name(),
                  cudnn_benchmark=torch.backends.cudnn.benchmark, **values)

    def onset(self, **values):
        self.mark("onset", **self.steps.close_segment(), **values)

    def end(self, derived=None, **values):
        """Closes the window; derived(summary) adds figures computed from its statistics."""
        summary = self.steps.close_segment()
        self.steps.write()
        if derived and summary.get("compute_median"):
            values.update(derived(summary))
        self.mark("end", **summary, **values)


# ---------------------------------------------------------------- models, data and steps

def resnet50():
    import torchvision
    model = torchvision.models.resnet50(num_classes=1000).to(DEV).to(memory_format=torch.channels_last)
    return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def decoder_lm(layers=12, d_model=1024, heads=16, vocab=32768):
    """A GPT-like decoder: pre-norm blocks of causal self-attention and a 4x GELU MLP."""

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
            self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
            self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                     nn.Linear(4 * d_model, d_model))

        def forward(self, x):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, heads, -1).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d_model))
            return x + self.mlp(self.norm2(x))

    class DecoderLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed, self.pos = nn.Embedding(vocab, d_model), nn.Embedding(4096, d_model)
            self.blocks = nn.Sequential(*[Block() for _ in range(layers)])
            self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, vocab, bias=False)

        def forward(self, tokens):
            x = self.embed(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
            return self.head(self.norm(self.blocks(x)))

    return DecoderLM().to(DEV)


def train_step(model, opt, loss_of, autocast=None, scaler=None):
    """One optimizer step on (x, y); loss_of(output, y) gives the loss."""
    import contextlib

    def step(x, y):
        scope = torch.autocast("cuda", dtype=autocast) if autocast else contextlib.nullcontext()
        with scope:
            loss = loss_of(model(x), y)
        opt.zero_grad(set_to_none=True)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
    return step


def image_loss(out, y):
    return F.cross_entropy(out, y)


def gpu_images(batch):
    x = torch.randn(batch, 3, 224, 224, device=DEV).contiguous(memory_format=torch.channels_last)
    return x, torch.randint(0, 1000, (batch,), device=DEV)


def to_gpu(batch):
    """A loader's uint8 images to normalised channels-last floats on the GPU."""
    x, y = batch
    x = x.to(DEV, non_blocking=True).float().div_(255).sub_(0.45).div_(0.225)
    return x.contiguous(memory_format=torch.channels_last), y.to(DEV, non_blocking=True)


class DecodedImages:
    """Stands for JPEG decode and augmentation: cost_s of CPU time per sample, then a uint8 image."""

    def __init__(self, cost_s):
        self.cost_s, self.image = cost_s, None

    def __len__(self):
        return 10_000_000

    def __getitem__(self, i):
        if self.cost_s > 0:
            time.sleep(self.cost_s)
        if self.image is None:
            self.image = torch.randint(0, 256, (3, 224, 224), dtype=torch.uint8)
        return self.image, i % 1000


def staggered_start(gap_s, worker_id):
    """Offsets worker k by k * gap_s, so equal workers deliver evenly spaced instead of together."""
    time.sleep(gap_s * worker_id)


def loader(batch, workers, cost_s, pin, stagger_s=0.0):
    from torch.utils.data import DataLoader
    extra = {"prefetch_factor": 2} if workers else {}
    if stagger_s:
        extra["worker_init_fn"] = functools.partial(staggered_start, stagger_s)
    return DataLoader(DecodedImages(cost_s), batch_size=batch, num_workers=workers,
                      pin_memory=pin, **extra)


def host_images(batch, pin):
    x = torch.randint(0, 256, (batch, 3, 224, 224), dtype=torch.uint8)
    return (x.pin_memory() if pin else x), torch.randint(0, 1000, (batch,))


def loader_step_time(step, batch, pin):
    """Seconds per step on a host batch like the loader's (its copy and conversion included)."""
    host = host_images(batch, pin)
    return timed(lambda: step(*to_gpu(host)), 3, 5)


def timed(work, warm, runs):
    """Seconds per call of work() after `warm` calls, synchronized."""
    for _ in range(warm):
        work()
    torch.cuda.synchronize()
    began = time.time()
    for _ in range(runs):
        work()
    torch.cuda.synchronize()
    return (time.time() - began) / runs


def run_gpu_resident(ctx, work, seconds, step_s, after_step=None, sync_span_s=SYNC_SPAN_S):
    """Steps on GPU-resident data for `seconds` of host time, synchronizing every ~sync_span_s."""
    sync_every, n = max(1, round(sync_span_s / max(step_s, 1e-4))), 0
    stop = time.time() + seconds
    while time.time() < stop:
        ctx.steps.gpu_step(work)
        n += 1
        if n % sync_every == 0:
            ctx.steps.flush()
        if after_step:
            after_step()
    ctx.steps.flush()


def run_loader(ctx, batches, step, seconds):
    stop = time.time() + seconds
    while time.time() < stop:
        ctx.steps.host_step(lambda: next(batches), lambda b: step(*to_gpu(b)))


# ---------------------------------------------------------------- detector cases

def healthy_then_loader_bound(ctx):
    """20 s on GPU-resident data, then (onset) 30 s from 4 staggered workers, a batch every ~1 s."""
    healthy_batch, loader_batch, workers, spacing_s = ctx.batch(128), ctx.batch(512), 4, 1.0
    model, opt = resnet50()
    step = train_step(model, opt, image_loss, autocast=torch.bfloat16)
    x, y = gpu_images(healthy_batch)
    healthy_s = timed(lambda: step(x, y), 5, 10)
    loader_step_s = loader_step_time(step, loader_batch, pin=True)  # autotunes its shape too
    worker_s = spacing_s * workers
    cost_s = worker_s / loader_batch
    data = loader(loader_batch, workers, cost_s, pin=True, stagger_s=spacing_s)
    ctx.start(model="resnet50", precision="bf16-autocast", batch=healthy_batch, data="gpu-resident",
              warm_step_s=healthy_s)
    opens_at, batches = time.time() + 20 - worker_s - 0.5, []

    def start_workers_early():
        # The workers start one worker-batch before the onset, so batches arrive evenly from it.
        if not batches and time.time() >= opens_at:
            batches.append(iter(data))

    run_gpu_resident(ctx, lambda: step(x, y), 20, healthy_s, start_workers_early)
    start_workers_early()
    ctx.onset(loader_batch=loader_batch, workers=workers, cost_ms=cost_s * 1e3, pin_memory=True,
              planned_spacing_s=spacing_s, warm_step_s=loader_step_s)
    run_loader(ctx, batches[0], step, 30)
    ctx.end(batch=loader_batch)


def spin_kernel(ctx):
    """torch.cuda._sleep: one thread spinning keeps utilization at 100% with almost no SM work."""
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

    ctx.start(kernel="torch.cuda._sleep", threads=1, chunk_ms=50, chunks_per_step=4,
              spin_clock_mhz=cycles_per_s / 1e6)
    run_gpu_resident(ctx, four_chunks, 30, 0.2, sync_span_s=1.0)  # ~1 s queued between synchronizes
    ctx.end()


def checkpoint_to_cpu(value):
    if isinstance(value, dict):
        return {k: checkpoint_to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(checkpoint_to_cpu(v) for v in value)
    return value.detach().to("cpu") if torch.is_tensor(value) else value


def checkpoint_every_16s(ctx):
    """Training on GPU-resident data with a ~4 s checkpoint pause starting every 16 s."""
    batch, period_s, pause_s = ctx.batch(256), 16.0, 4.0
    path = f"/tmp/labelled-jobs-checkpoint-{os.getpid()}.pt"
    model, opt = resnet50()
    step = train_step(model, opt, image_loss, autocast=torch.bfloat16)
    x, y = gpu_images(batch)
    step_s = timed(lambda: step(x, y), 5, 10)
    ctx.start(model="resnet50", precision="bf16-autocast", batch=batch, data="gpu-resident",
              period_s=period_s, pause_s=pause_s, warm_step_s=step_s)
    next_pause, saves, saved_bytes = time.time() + period_s, [], [0]

    def maybe_checkpoint():
        nonlocal next_pause
        if time.time() < next_pause:
            return
        ctx.steps.flush()
        began = time.time()
        state = checkpoint_to_cpu({"model": model.state_dict(), "optimizer": opt.state_dict()})
        copied = time.time()
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        saves.append(time.time() - copied)
        saved_bytes[0] = os.path.getsize(path)
        time.sleep(max(0.0, began + pause_s - time.time()))  # stands for a copy to slower storage
        ctx.steps.pause(copied - began, "checkpoint")
        next_pause += period_s

    try:
        run_gpu_resident(ctx, lambda: step(x, y), 75, step_s, maybe_checkpoint)
    finally:
        if os.path.exists(path):
            os.remove(path)
    ctx.end(save_median=median(saves), checkpoint_mb=saved_bytes[0] / 1e6)


def loader_job(ctx, batch, workers, pin, seconds, cost_for, stagger_s=0.0, **values):
    """ResNet-50 bf16 from a DataLoader whose per-sample cost cost_for(step_s) sets from the step."""
    model, opt = resnet50()
    step = train_step(model, opt, image_loss, autocast=torch.bfloat16)
    step_s = loader_step_time(step, batch, pin)
    cost_s = cost_for(step_s) / batch
    batches = iter(loader(batch, workers, cost_s, pin, stagger_s))
    for _ in range(max(1, workers)):  # the first batch of each worker falls before the window
        step(*to_gpu(next(batches)))
    torch.cuda.synchronize()
    ctx.start(model="resnet50", precision="bf16-autocast", batch=batch, workers=workers,
              cost_ms=cost_s * 1e3, worker_batch_s=cost_s * batch, pin_memory=pin, warm_step_s=step_s,
              **values)
    run_loader(ctx, batches, step, seconds)
    ctx.end()


def num_workers_0(ctx):
    """Loading in the training process: a ~0.6 s step of which the GPU computes ~0.04 s."""
    step_total_s = 0.6
    loader_job(ctx, ctx.batch(128), 0, False, 40, lambda s: max(0.0, step_total_s - s),
               planned_step_s=step_total_s)


def loader_4_workers_starving(ctx):
    """4 workers started together deliver 4 batches at once every ~1.5 s; the GPU waits ~60%."""
    workers, wait_share = 4, 0.6
    loader_job(ctx, ctx.batch(640), workers, True, 45,
               lambda s: min(1.8, max(1.2, workers * s / (1 - wait_share))),
               planned_wait_share=wait_share)


# ---------------------------------------------------------------- precision cases

def set_precision(matmul_precision, cudnn_tf32):
    torch.set_float32_matmul_precision(matmul_precision)
    torch.backends.cuda.matmul.allow_tf32 = matmul_precision != "highest"
    torch.backends.cudnn.allow_tf32 = cudnn_tf32


def grad_scaler():
    try:
        return torch.amp.GradScaler("cuda")
    except (AttributeError, TypeError):
        return torch.cuda.amp.GradScaler()


def precision_values(model, autocast, scaler):
    return {"dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
            "autocast": str(autocast).replace("torch.", "") if autocast else "none",
            "matmul_precision": torch.get_float32_matmul_precision(),
            "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_tf32": torch.backends.cudnn.allow_tf32, "grad_scaler": scaler is not None}


def transformer_lm(matmul_precision, autocast_name=None):
    def job(ctx):
        set_precision(matmul_precision, cudnn_tf32=True)
        autocast = getattr(torch, autocast_name) if autocast_name else None
        batch, seq, vocab = ctx.batch(8), 1024, 32768
        model = decoder_lm(vocab=vocab)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
        scaler = grad_scaler() if autocast_name == "float16" else None
        tokens = torch.randint(0, vocab, (batch, seq + 1), device=DEV)
        x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        step = train_step(model, opt, lambda out, t: F.cross_entropy(out.flatten(0, 1), t.flatten()),
                          autocast, scaler)
        step_s = timed(lambda: step(x, y), 3, 3)
        params_m = sum(p.numel() for p in model.parameters()) / 1e6
        ctx.start(model="decoder-lm", layers=12, d_model=1024, heads=16, seq=seq, vocab=vocab,
                  batch=batch, params_m=params_m, optimizer="adamw", warm_step_s=step_s,
                  **precision_values(model, autocast, scaler))
        run_gpu_resident(ctx, lambda: step(x, y), 30, step_s)
        ctx.end(lambda s: {"tokens_per_s": batch * seq / s["compute_median"]})
    return job


def resnet50_precision(cudnn_tf32, autocast_name=None):
    def job(ctx):
        set_precision("highest", cudnn_tf32)
        autocast = getattr(torch, autocast_name) if autocast_name else None
        batch = ctx.batch(256)
        model, opt = resnet50()
        step = train_step(model, opt, image_loss, autocast)
        x, y = gpu_images(batch)
        step_s = timed(lambda: step(x, y), 5, 5)
        ctx.start(model="resnet50", batch=batch, data="gpu-resident", optimizer="sgd",
                  warm_step_s=step_s, **precision_values(model, autocast, None))
        run_gpu_resident(ctx, lambda: step(x, y), 30, step_s)
        ctx.end(lambda s: {"images_per_s": batch / s["compute_median"]})
    return job


def memory_bound_elementwise(ctx):
    """fp32 x = x * a + b and a row sum over 2 GiB tensors: DRAM-bound, no matmul."""
    n, rows, passes = ctx.batch(1 << 29), 8192, 10
    with torch.no_grad():
        x = torch.rand(n, device=DEV)
        a = torch.rand(n, device=DEV).mul_(0.49).add_(0.5)  # in (0.5, 0.99): x stays bounded
        b = torch.rand(n, device=DEV).mul_(0.01)

        def work():
            for _ in range(passes):
                x.mul_(a).add_(b)
            x.view(rows, -1).sum(dim=1)

        step_s = timed(work, 2, 3)
        bytes_per_step = passes * 2 * 3 * n * 4 + n * 4
        ctx.start(dtype="float32", elements=n, tensors_gib=3 * n * 4 / 2**30,
                  passes_per_step=passes, bytes_per_step=bytes_per_step, warm_step_s=step_s)
        run_gpu_resident(ctx, work, 30, step_s)
    ctx.end(lambda s: {"dram_gb_per_s": bytes_per_step / s["compute_median"] / 1e9})


def mlp_fp32_large_matmul(ctx):
    """Four 8192x8192 fp32 linear layers trained with TF32 off: SM-bound, tensor cores idle."""
    set_precision("highest", cudnn_tf32=True)
    tokens, width, layers = ctx.batch(8192), 8192, 4
    model = nn.Sequential(*[m for _ in range(layers)
                            for m in (nn.Linear(width, width, bias=False), nn.ReLU())]).to(DEV)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(tokens, width, device=DEV)
    step = train_step(model, opt, lambda out, _: out.square().mean())
    step_s = timed(lambda: step(x, None), 2, 3)
    flops = 2 * tokens * width * width * (3 * layers - 1)  # forward, weight grads, input grads past layer 1
    ctx.start(model="mlp", layers=layers, width=width, tokens=tokens, flops_per_step=flops,
              warm_step_s=step_s, **precision_values(model, None, None))
    run_gpu_resident(ctx, lambda: step(x, None), 30, step_s)
    ctx.end(lambda s: {"tflops": flops / s["compute_median"] / 1e12})


# ---------------------------------------------------------------- the table and the driver

@dataclass
class Job:
    run: Callable
    seconds: float  # the labelled window
    startup_s: float  # estimated: Python and torch start-up plus warm-up before the window
    group: str
    about: str


JOBS = {
    "resnet50-healthy-then-loader-bound": Job(healthy_then_loader_bound, 50, 22, "detector",
        "ResNet-50 bf16 b128 on GPU data 20 s, then (onset) b512 from 4 staggered workers, a batch ~1 s"),
    "spin-kernel": Job(spin_kernel, 30, 8, "detector",
        "torch.cuda._sleep in a loop: utilization 100%, SM activity near 0"),
    "resnet50-checkpoint-every-16s": Job(checkpoint_every_16s, 75, 15, "detector",
        "ResNet-50 bf16 b256 on GPU data, a ~4 s checkpoint (copy, torch.save, fsync) every 16 s"),
    "resnet50-num-workers-0": Job(num_workers_0, 40, 14, "detector",
        "ResNet-50 bf16 b128, num_workers=0: ~0.6 s steps, GPU busy ~0.04 s of each"),
    "resnet50-loader-4-workers-starving": Job(loader_4_workers_starving, 45, 17, "detector",
        "ResNet-50 bf16 b640, 4 workers delivering together every ~1.5 s: GPU waits ~60%"),
    "transformer-lm-fp32": Job(transformer_lm("highest"), 30, 12, "precision",
        "GPT-like LM 12x1024, seq 1024, b8, AdamW, fp32 with TF32 off"),
    "transformer-lm-tf32": Job(transformer_lm("high"), 30, 11, "precision",
        "the same LM, fp32 with TF32 matmuls (matmul precision high)"),
    "transformer-lm-bf16": Job(transformer_lm("highest", "bfloat16"), 30, 10, "precision",
        "the same LM under autocast bf16"),
    "transformer-lm-fp16": Job(transformer_lm("highest", "float16"), 30, 10, "precision",
        "the same LM under autocast fp16 with GradScaler"),
    "resnet50-fp32-tf32-convs": Job(resnet50_precision(True), 30, 15, "precision",
        "ResNet-50 b256 fp32, PyTorch defaults: cuDNN TF32 on, matmul TF32 off"),
    "resnet50-fp32-no-tf32": Job(resnet50_precision(False), 30, 15, "precision",
        "ResNet-50 b256 fp32, cuDNN and matmul TF32 off"),
    "resnet50-bf16": Job(resnet50_precision(True, "bfloat16"), 30, 13, "precision",
        "ResNet-50 b256 under autocast bf16"),
    "memory-bound-elementwise": Job(memory_bound_elementwise, 30, 9, "precision",
        "fp32 x = x*a + b and row sums over 3 x 2 GiB: DRAM-bound, no matmul"),
    "mlp-fp32-large-matmul": Job(mlp_fp32_large_matmul, 30, 10, "precision",
        "4 x 8192x8192 fp32 linear layers, TF32 off: SM-bound, tensor cores idle"),
}


def is_oom(error):
    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    return (oom_type is not None and isinstance(error, oom_type)) or "out of memory" in str(error)


class Stopped(BaseException):
    """SIGTERM reached the job: its time limit passed or the whole batch is being stopped."""


def stop_on_sigterm(*_):
    raise Stopped("SIGTERM from the driver: past the time limit, or the batch was stopped")


def run_job_process(outdir, name):
    """The body of one job's process; returns its exit status (3: failed, error mark written)."""
    load_torch()
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    torch.backends.cudnn.benchmark = True
    for scale in (1.0, 0.5):
        ctx, retry = Ctx(outdir, name, scale), False
        try:
            JOBS[name].run(ctx)
            return 0
        except BaseException as error:  # noqa: BLE001 - every failure becomes an error mark
            traceback.print_exc()
            if scale == 1.0 and is_oom(error):
                retry = True
            else:
                if ctx.started:
                    ctx.steps.write()
                detail = (str(error).splitlines() or [""])[0]
                ctx.mark("error", type=type(error).__name__, detail=detail)
                return 3
        if retry:
            ctx = None
            gc.collect()
            torch.cuda.empty_cache()
            Marks(outdir, name)("retry", reason="oom", scale=0.5)
    return 3


def final_mark_written(outdir, name, since):
    try:
        with open(os.path.join(outdir, "marks.csv")) as f:
            lines = [line.rstrip("\n").split(",", 1) for line in f if "," in line]
    except OSError:
        return False
    finals = {f"{name}:end", f"{name}:error"}
    for t, label in lines:
        try:
            if float(t) >= since - 1 and label.split(" ", 1)[0] in finals:
                return True
        except ValueError:
            continue
    return False


def run_in_own_process(outdir, name, limit_s):
    """Runs one job in a new session; kills its whole process group (DataLoader workers too)."""
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--job-process", outdir, name],
                             start_new_session=True)
    timed_out = False
    try:
        child.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        if child.poll() is None:  # past its limit, or the driver itself is being stopped
            kill_group(child.pid, signal.SIGTERM)  # the job writes its error mark and steps
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        kill_group(child.pid, signal.SIGKILL)
        child.wait()
    return child.returncode, timed_out


def kill_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_one(outdir, name, limit_s, mark):
    """Runs one job; True when it reached its end mark. Never raises an Exception."""
    launched = time.time()
    print(f"{time.strftime('%H:%M:%S')} {name}: launching (limit {limit_s:.0f} s)", flush=True)
    try:
        code, timed_out = run_in_own_process(outdir, name, limit_s)
    except Exception as error:  # noqa: BLE001 - one job's failure must not end the batch
        mark("error", type=type(error).__name__, detail=str(error))
        return False
    if not final_mark_written(outdir, name, launched):
        mark("error", **({"timeout_s": limit_s} if timed_out else {"exit": code}))
        return False
    return code == 0


def drive(outdir, names, budget_s):
    os.makedirs(outdir, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    began, failed = time.time(), 0
    time.sleep(GAP_S)
    for name in names:
        job, mark = JOBS[name], Marks(outdir, name)
        limit_s = job.startup_s + job.seconds + MARGIN_S
        if budget_s is not None:
            left = budget_s - (time.time() - began)
            if left < job.startup_s + job.seconds + GAP_S:
                mark("skipped", reason="budget", left_s=left)
                failed += 1
                continue
            limit_s = min(limit_s, left - GAP_S)
        failed += not run_one(outdir, name, limit_s, mark)
        time.sleep(GAP_S)
    return 1 if failed else 0


def list_jobs():
    totals = {}
    print(f"{'job':38} {'window_s':>8} {'with_startup_s':>14}  description")
    for name, job in JOBS.items():
        whole = job.startup_s + job.seconds + GAP_S
        totals[job.group] = totals.get(job.group, 0) + whole
        print(f"{name:38} {job.seconds:8.0f} {whole:14.0f}  {job.about}")
    for group, seconds in totals.items():
        print(f"total {group} jobs: {seconds + GAP_S:.0f} s (startup estimated, gaps included)")
    print(f"total: {sum(totals.values()) + GAP_S:.0f} s")


def main(argv):
    if argv[:1] == ["--list"]:
        list_jobs()
        return 0
    if argv[:1] == ["--job-process"] and len(argv) == 3:
        return run_job_process(argv[1], argv[2])
    budget_s = None
    if "--budget" in argv:
        at = argv.index("--budget")
        budget_s, argv = float(argv[at + 1]), argv[:at] + argv[at + 2:]
    unknown = [name for name in argv[1:] if name not in JOBS]
    if len(argv) < 2 or unknown:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        print(f"unknown jobs: {' '.join(unknown)}; --list shows them" if unknown else "", file=sys.stderr)
        return 2
    return drive(argv[0], argv[1:], budget_s)


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    if sys.argv[1:2] == ["--job-process"]:
        os._exit(code)  # DataLoader workers and CUDA teardown are left to the kernel: no hang at exit
    sys.exit(code)
