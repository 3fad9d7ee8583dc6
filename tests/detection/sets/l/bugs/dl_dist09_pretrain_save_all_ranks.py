# source: https://github.com/DLLXW/baby-llama2-chinese/pull/56
# area: porting & distributed
# bug: the checkpoint branch is keyed on "ddp and local_rank == 0", so every non-zero rank falls into the else and writes the same file concurrently
import math
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab=256, dim=64, n_layer=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, targets=None):
        t = idx.size(1)
        pos = torch.arange(t, device=idx.device)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        h = self.blocks(self.tok(idx) + self.pos(pos), mask=mask, is_causal=True)
        logits = self.lm_head(self.ln_f(h))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def get_lr(it, warmup=5, max_iters=40, lr=6e-4, min_lr=6e-5):
    if it < warmup:
        return lr * (it + 1) / warmup
    ratio = (it - warmup) / max(1, max_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def main():
    ddp = int(os.environ.get("RANK", -1)) != -1
    if ddp:
        local_rank = int(os.environ["LOCAL_RANK"])
        device = f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda"):
            torch.cuda.set_device(device)
        dist.init_process_group(backend="nccl" if device.startswith("cuda") else "gloo")
    else:
        local_rank = 0
        device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"

    torch.manual_seed(1337)
    model = MiniGPT().to(device)
    if ddp:
        model = nn.parallel.DistributedDataParallel(
            model, device_ids=[local_rank] if device_type == "cuda" else None)
    raw_model = model.module if ddp else model
    optimizer = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.1)
    out_dir = tempfile.mkdtemp(prefix="pretrain_")
    data = torch.randint(0, 256, (64, 33))

    for epoch in range(2):
        for it in range(0, 64, 16):
            for group in optimizer.param_groups:
                group["lr"] = get_lr(epoch * 4 + it // 16)
            batch = data[it:it + 16].to(device)
            with torch.autocast(device_type=device_type, dtype=torch.bfloat16, enabled=device_type == "cuda"):
                _, loss = model(batch[:, :-1], batch[:, 1:])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        ckpt_path = os.path.join(out_dir, f"epoch_{epoch}.pth")
        if ddp and local_rank == 0:
            torch.save(raw_model.state_dict(), ckpt_path)
        else:
            torch.save(model.state_dict(), ckpt_path)  # expect: any
    print("saved", sorted(os.listdir(out_dir)), "last loss", loss.item())
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
