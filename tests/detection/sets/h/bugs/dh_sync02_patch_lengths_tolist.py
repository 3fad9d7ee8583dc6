# source: https://github.com/lucidrains/vit-pytorch/issues/362
# area: transfer & sync
# bug: forward() turns the on-device token lengths into a Python list with .tolist() on every call, forcing a device-to-host sync inside the model
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class VarViTConfig:
    patch_dim: int = 48
    dim: int = 64
    depth: int = 2
    heads: int = 4
    num_classes: int = 10
    max_tokens: int = 32


class VariableLengthViT(nn.Module):
    """ViT over a ragged batch of patch sequences, padded to max_tokens."""

    def __init__(self, cfg: VarViTConfig):
        super().__init__()
        self.cfg = cfg
        self.to_tokens = nn.Linear(cfg.patch_dim, cfg.dim)
        self.pos = nn.Parameter(torch.randn(1, cfg.max_tokens, cfg.dim) * 0.02)
        layer = nn.TransformerEncoderLayer(cfg.dim, cfg.heads, cfg.dim * 2, batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, cfg.depth)
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    def forward(self, patches, keep_mask):
        b, n, _ = patches.shape
        x = self.to_tokens(patches) + self.pos[:, :n]
        x = self.encoder(x, src_key_padding_mask=~keep_mask)
        x = self.norm(x)

        lengths = keep_mask.sum(dim=-1)
        lengths_list = lengths.tolist()  # expect: any
        pooled = []
        aux = []
        for i in range(b):
            n_i = lengths_list[i]
            pooled.append(x[i, :n_i].mean(dim=0))
            aux.append({"num_tokens": n_i})
        pooled = torch.stack(pooled)
        return self.head(pooled), aux


def random_ragged_batch(batch, cfg, device, gen):
    patches = torch.randn(batch, cfg.max_tokens, cfg.patch_dim, generator=gen)
    lengths = torch.randint(4, cfg.max_tokens + 1, (batch,), generator=gen)
    keep = torch.arange(cfg.max_tokens)[None, :] < lengths[:, None]
    labels = torch.randint(0, cfg.num_classes, (batch,), generator=gen)
    return patches.to(device), keep.to(device), labels.to(device)


def train_steps(model, optimizer, cfg, device, steps=20, batch=16):
    gen = torch.Generator().manual_seed(0)
    crit = nn.CrossEntropyLoss()
    history = []
    model.train()
    for step in range(steps):
        patches, keep, labels = random_ragged_batch(batch, cfg, device, gen)
        logits, _ = model(patches, keep)
        loss = crit(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.append(loss.detach())
    return torch.stack(history)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = VarViTConfig()
    model = VariableLengthViT(cfg).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    losses = train_steps(model, optimizer, cfg, device)
    print("first/last loss:", losses[0].item(), losses[-1].item())


if __name__ == "__main__":
    main()
