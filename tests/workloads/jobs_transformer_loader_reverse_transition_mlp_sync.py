# Jobs, one after another in one process: python3 jobs_transformer_loader_reverse_transition_mlp_sync.py MARKS
#   tfm_starved: a 12-layer transformer encoder (d 1024, 16 heads), batch 32 x 512 tokens, bf16,
#                4 DataLoader workers at 80 ms per sample (each worker's batch takes ~2.6 s; the
#                four deliver together), 45 s
#   reverse:     ResNet-50 batch 128, 3 workers at 20 ms per sample for 30 s (onset = start), then
#                the same model on data already on the GPU for 25 s (recovered mark)
#   mlp_sync:    an MLP, batch 64, loss.item() every step (a host sync per step), 40 s
# Each job's end mark carries the share of its time spent waiting for the next batch.
import os, sys, runpy, time
marks = sys.argv[1]
sys.argv = ["workloads.py", marks, "45", "none"]
g = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads.py"))
torch, dev, mark, step, nn = g["torch"], g["dev"], g["mark"], g["step"], g["nn"]
DataLoader, Dataset = g["DataLoader"], g["Dataset"]


class Tokens(Dataset):
    def __init__(self, cost_s):
        self.cost = cost_s

    def __len__(self):
        return 1_000_000

    def __getitem__(self, i):
        time.sleep(self.cost)
        return torch.randint(0, 32000, (512,)), torch.randint(0, 32000, (512,))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32000, 1024)
        layer = nn.TransformerEncoderLayer(1024, 16, 4096, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 12)
        self.out = nn.Linear(1024, 32000)

    def forward(self, x):
        return self.out(self.enc(self.emb(x)))


def lm_step(m, opt, x, y):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = nn.functional.cross_entropy(m(x).flatten(0, 1), y.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


# tfm_starved
m = LM().to(dev)
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
dl = DataLoader(Tokens(0.080), batch_size=32, num_workers=4, prefetch_factor=2)
it = iter(dl)
x, y = next(it)
lm_step(m, opt, x.to(dev), y.to(dev))
torch.cuda.synchronize()
mark("tfm_starved:start")
t0, n, wait = time.time(), 0, 0.0
while time.time() - t0 < 45:
    w0 = time.time()
    x, y = next(it)
    wait += time.time() - w0
    lm_step(m, opt, x.to(dev), y.to(dev))
    n += 1
torch.cuda.synchronize()
total = time.time() - t0
mark(f"tfm_starved:end steps={n} wait_share={wait / total:.2f}")
del it, dl, m, opt
torch.cuda.empty_cache()
time.sleep(3)

# reverse
m, opt, crit = g["resnet"]()
dl = DataLoader(g["SlowDS"](0.020), batch_size=128, num_workers=3, prefetch_factor=2)
it = iter(dl)
x, y = next(it)
step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
torch.cuda.synchronize()
mark("reverse:start")
mark("reverse:onset")
t0, n, wait = time.time(), 0, 0.0
while time.time() - t0 < 30:
    w0 = time.time()
    x, y = next(it)
    wait += time.time() - w0
    step(m, opt, crit, x.to(dev).to(memory_format=torch.channels_last), y.to(dev))
    n += 1
torch.cuda.synchronize()
starving = time.time() - t0
del it, dl
xg = torch.randn(128, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
yg = torch.randint(0, 1000, (128,), device=dev)
mark(f"reverse:recovered steps={n} wait_share={wait / starving:.2f}")
t0, k = time.time(), 0
while time.time() - t0 < 25:
    step(m, opt, crit, xg, yg)
    k += 1
    if k % 10 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
mark(f"reverse:end steps={k}")
del m, opt, xg
torch.cuda.empty_cache()
time.sleep(3)

# mlp_sync
m = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 100)).to(dev)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
mark("mlp_sync:start")
t0, n, total_loss = time.time(), 0, 0.0
while time.time() - t0 < 40:
    x = torch.randn(64, 512, device=dev)
    y = torch.randint(0, 100, (64,), device=dev)
    loss = nn.functional.cross_entropy(m(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    total_loss += loss.item()
    n += 1
mark(f"mlp_sync:end steps={n}")
