# source: https://github.com/jwohlwend/boltz/issues/662
# area: AMP
# bug: the "full precision" region disables CPU autocast only; on a GPU the surrounding CUDA fp16 autocast stays active, so the confidence loss runs under autocast and F.binary_cross_entropy raises "unsafe to autocast"
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F


def full_precision():
    """Context used by precision-sensitive heads."""
    return torch.autocast("cpu", enabled=False)  # expect: any


class Trunk(nn.Module):
    def __init__(self, dim=64, depth=3):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))
            for _ in range(depth))

    def forward(self, s):
        for layer in self.layers:
            s = s + layer(s)
        return s


class ConfidenceHead(nn.Module):
    """Predicts per-residue probability that the local structure is correct."""

    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Linear(dim, 1)

    def forward(self, s):
        return torch.sigmoid(self.proj(s).squeeze(-1))

    def loss(self, probs, target, mask):
        with full_precision():
            bce = F.binary_cross_entropy(probs.float(), target.float(), reduction="none")
            return (bce * mask).sum() / mask.sum().clamp(min=1)


class FoldingModel(nn.Module):
    def __init__(self, vocab=21, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.trunk = Trunk(dim)
        self.dist_head = nn.Linear(dim, 1)
        self.confidence = ConfidenceHead(dim)

    def forward(self, seq):
        s = self.trunk(self.embed(seq))
        return self.dist_head(s).squeeze(-1), self.confidence(s)


def training_step(model, batch, device, use_amp):
    seq, coords_target, plddt_target, mask = batch
    ctx = torch.autocast(device.type, dtype=torch.float16) if use_amp else contextlib.nullcontext()
    with ctx:
        pred_dist, probs = model(seq)
        dist_loss = ((pred_dist.float() - coords_target) ** 2 * mask).sum() / mask.sum()
        conf_loss = model.confidence.loss(probs, plddt_target, mask)
    return dist_loss + 0.1 * conf_loss


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = FoldingModel().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for _ in range(5):
        seq = torch.randint(0, 21, (4, 96), device=device)
        coords_target = torch.randn(4, 96, device=device)
        plddt_target = (torch.rand(4, 96, device=device) > 0.3).float()
        mask = torch.ones(4, 96, device=device)
        loss = training_step(model, (seq, coords_target, plddt_target, mask), device, use_amp)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("loss:", loss.item())


if __name__ == "__main__":
    main()
