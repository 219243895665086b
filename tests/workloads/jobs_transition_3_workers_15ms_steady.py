# Jobs, one per call: python3 jobs_transition_3_workers_15ms_steady.py MARKS NAME
#   transition2: healthy 15 s, then 2 workers at 30 ms/sample, batch 128 (a batch every ~1.9 s) for
#                30 s (onset mark when the loader starts), then healthy 12 s (recovered mark)
#   starved_1s:  batch 256, 3 workers, 15 ms/sample (a batch every ~1.3 s), 40 s
#   steady:      batch 256 on data already on the GPU, 110 s
import os, sys, runpy, time
marks, name = sys.argv[1], sys.argv[2]
dur = {"transition2": 30, "starved_1s": 40, "steady": 110}[name]
sys.argv = ["workloads.py", marks, str(dur), "none"]
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
if name == "starved_1s":
    g["run_loader"]("starved_1s", 256, 3, 0.015)
elif name == "steady":
    g["healthy"]("steady", 256)
else:
    torch, dev, mark, step = g["torch"], g["dev"], g["mark"], g["step"]
    m, opt, crit = g["resnet"]()
    x = torch.randn(128, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device=dev)
    for _ in range(5):
        step(m, opt, crit, x, y)
    torch.cuda.synchronize()
    mark("transition2:start")
    def busy(secs):
        t0, n = time.time(), 0
        while time.time() - t0 < secs:
            step(m, opt, crit, x, y)
            n += 1
            if n % 10 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    busy(15)
    dl = g["DataLoader"](g["SlowDS"](0.030), batch_size=128, num_workers=2, prefetch_factor=2)
    it = iter(dl)
    mark("transition2:onset")
    t0 = time.time()
    while time.time() - t0 < 30:
        xb, yb = next(it)
        step(m, opt, crit, xb.to(dev).to(memory_format=torch.channels_last), yb.to(dev))
    torch.cuda.synchronize()
    del it, dl
    mark("transition2:recovered")
    busy(12)
    mark("transition2:end")
