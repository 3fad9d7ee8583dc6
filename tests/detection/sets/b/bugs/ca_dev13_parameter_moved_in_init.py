# source: https://github.com/pytorch/pytorch/issues/20089
# area: device placement
# bug: nn.Parameter(...).to(device) in __init__ returns a plain non-leaf tensor on CUDA, so logit_scale is never registered, never optimized and missing from state_dict
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DualEncoder(nn.Module):
    """CLIP-style contrastive model over two synthetic 'views'."""

    def __init__(self, dim_a=20, dim_b=12, embed=32):
        super().__init__()
        self.enc_a = nn.Sequential(nn.Linear(dim_a, 64), nn.ReLU(), nn.Linear(64, embed))
        self.enc_b = nn.Sequential(nn.Linear(dim_b, 64), nn.ReLU(), nn.Linear(64, embed))
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07)).to(device)  # expect: any

    def forward(self, a, b):
        za = F.normalize(self.enc_a(a), dim=-1)
        zb = F.normalize(self.enc_b(b), dim=-1)
        return self.logit_scale.exp() * za @ zb.t()


def clip_loss(logits):
    target = torch.arange(logits.size(0), device=logits.device)
    return (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) / 2


def make_pairs(n):
    z = torch.randn(n, 8)
    a = torch.cat([z, torch.randn(n, 12)], dim=1)
    b = torch.cat([z[:, :6], torch.randn(n, 6)], dim=1)
    return a, b


def main():
    model = DualEncoder().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    a_all, b_all = make_pairs(256)
    for epoch in range(3):
        perm = torch.randperm(a_all.size(0))
        for i in range(0, a_all.size(0), 64):
            idx = perm[i:i + 64]
            logits = model(a_all[idx].to(device), b_all[idx].to(device))
            loss = clip_loss(logits)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} scale {model.logit_scale.exp().item():.3f}")
    print("saved keys:", sorted(model.state_dict().keys())[:3], "...")


if __name__ == "__main__":
    main()
