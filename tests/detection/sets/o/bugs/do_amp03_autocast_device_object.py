# source: https://github.com/pytorch/pytorch/issues/124738
# area: AMP
# bug: the autocast context is built with the torch.device object instead of device.type, so on the GPU torch.autocast raises before the first step
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIG = {
    "block_size": 32,
    "batch_size": 16,
    "n_embd": 64,
    "vocab_size": 96,
    "max_iters": 30,
    "eval_iters": 4,
    "lr": 3e-3,
    "dtype": "float16",
}


class CharModel(nn.Module):
    def __init__(self, vocab_size, n_embd, block_size):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, n_embd)
        self.pos = nn.Embedding(block_size, n_embd)
        self.rnn = nn.GRU(n_embd, n_embd, batch_first=True)
        self.ln = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        h, _ = self.rnn(self.tok(idx) + self.pos(pos))
        logits = self.head(self.ln(h))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


def get_batch(data, cfg, device):
    ix = torch.randint(len(data) - cfg["block_size"] - 1, (cfg["batch_size"],), device=device)
    offsets = torch.arange(cfg["block_size"], device=device)
    x = data[ix[:, None] + offsets]
    y = data[ix[:, None] + offsets + 1]
    return x, y


def make_amp_context(device, dtype_name):
    ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype_name]
    if device.type == "cpu":
        return nullcontext()
    return torch.autocast(device_type=device, dtype=ptdtype)  # expect: any


@torch.no_grad()
def estimate_loss(model, data, cfg, device, ctx):
    model.eval()
    losses = torch.zeros(cfg["eval_iters"], device=device)
    for k in range(cfg["eval_iters"]):
        x, y = get_batch(data, cfg, device)
        with ctx:
            _, loss = model(x, y)
        losses[k] = loss
    model.train()
    return losses.mean()


def main(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.randint(0, cfg["vocab_size"], (5000,), device=device)
    model = CharModel(cfg["vocab_size"], cfg["n_embd"], cfg["block_size"]).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    ctx = make_amp_context(device, cfg["dtype"])
    scaler = torch.amp.GradScaler("cuda", enabled=(device.type == "cuda" and cfg["dtype"] == "float16"))
    for it in range(cfg["max_iters"]):
        x, y = get_batch(data, cfg, device)
        with ctx:
            _, loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
    print(f"val loss {estimate_loss(model, data, cfg, device, ctx).item():.4f}")


if __name__ == "__main__":
    main(CONFIG)
