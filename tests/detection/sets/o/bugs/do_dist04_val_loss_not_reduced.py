# source: https://github.com/Lightning-AI/litgpt/issues/599
# area: porting & distributed
# bug: validate() returns the loss of this rank's validation shard only; under multi-GPU DDP rank 0 logs and picks the best checkpoint from its own slice instead of the mean over all ranks
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class CharWindows(Dataset):
    def __init__(self, text_ids, block=32):
        self.ids = text_ids
        self.block = block

    def __len__(self):
        return (len(self.ids) - 1) // self.block

    def __getitem__(self, i):
        chunk = self.ids[i * self.block: (i + 1) * self.block + 1]
        return chunk[:-1], chunk[1:]


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=96, layers=2, block=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(block, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, dropout=0.0, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)
        mask = torch.triu(torch.full((block, block), float("-inf")), diagonal=1)
        self.register_buffer("causal", mask, persistent=False)

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(t, device=idx.device)
        h = self.tok(idx) + self.pos(pos)
        h = self.blocks(h, mask=self.causal[:t, :t])
        return self.head(h)


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    loss_sum = torch.zeros((), device=device)
    n_tokens = torch.zeros((), device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss_sum += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum")
        n_tokens += y.numel()
    model.train()
    return loss_sum / n_tokens  # expect: any


def main(out_dir):
    distributed = "RANK" in os.environ and dist.is_available()
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    g = torch.Generator().manual_seed(0)
    corpus = torch.randint(0, 64, (6_000,), generator=g)
    split = int(0.9 * len(corpus))
    train_ds, val_ds = CharWindows(corpus[:split]), CharWindows(corpus[split:])
    train_sampler = DistributedSampler(train_ds) if distributed else None
    val_sampler = DistributedSampler(val_ds, shuffle=False) if distributed else None
    train_loader = DataLoader(train_ds, batch_size=32, sampler=train_sampler, shuffle=train_sampler is None)
    val_loader = DataLoader(val_ds, batch_size=64, sampler=val_sampler)

    model = TinyLM().to(device)
    raw_model = model
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    best = float("inf")

    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        val_loss = validate(model, val_loader, device).item()
        if rank == 0:
            print(f"epoch {epoch}: val loss {val_loss:.4f}")
            if val_loss < best:
                best = val_loss
                torch.save(raw_model.state_dict(), os.path.join(out_dir, "best.pt"))

    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        main(d)
