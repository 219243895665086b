# Jobs, one per call: python3 jobs_1_worker_24ms_2_workers_50ms_transition.py MARKS NAME
#   starved_3s: batch 128, 1 worker, 24 ms/sample (a batch every ~3.1 s), 40 s
#   starved_6s: batch 256, 2 workers, 50 ms/sample (each worker 12.8 s per batch: one every ~6.4 s), 45 s
#   transition: healthy 15 s, then 1 worker at 20 ms/sample, batch 192 (~3.9 s) for 25 s (onset
#               mark when the loader starts), then healthy 12 s (recovered mark)
import os, sys, runpy, time
marks, name = sys.argv[1], sys.argv[2]
dur = {"starved_3s": 40, "starved_6s": 45, "transition": 25}[name]
sys.argv = ["workloads.py", marks, str(dur), "none"]
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
if name == "starved_3s":
    g["run_loader"]("starved_3s", 128, 1, 0.024)
elif name == "starved_6s":
    g["run_loader"]("starved_6s", 256, 2, 0.050)
else:
    torch, dev, mark, step = g["torch"], g["dev"], g["mark"], g["step"]
    m, opt, crit = g["resnet"]()
    x = torch.randn(192, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (192,), device=dev)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("transition:start")
    def busy(secs):
        t0, n = time.time(), 0
        while time.time() - t0 < secs:
            step(m, opt, crit, x, y)
            n += 1
            if n % 10 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    busy(15)
    dl = g["DataLoader"](g["SlowDS"](0.020), batch_size=192, num_workers=1, prefetch_factor=2)
    it = iter(dl)
    mark("transition:onset")
    t0 = time.time()
    while time.time() - t0 < 25:
        xb, yb = next(it)
        step(m, opt, crit, xb.to(dev).to(memory_format=torch.channels_last), yb.to(dev))
    torch.cuda.synchronize()
    del it, dl
    mark("transition:recovered")
    busy(12)
    mark("transition:end")
