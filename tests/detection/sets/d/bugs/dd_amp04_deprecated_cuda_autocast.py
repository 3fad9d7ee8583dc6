# source: https://github.com/WenjieDu/PyPOTS/issues/520
# area: AMP
# bug: the local-attention block forces fp32 scores with the deprecated torch.cuda.amp.autocast(enabled=False), which raises a FutureWarning on every forward and is slated for removal; it should be torch.amp.autocast("cuda", enabled=False)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LocalSelfAttention(nn.Module):
    """Windowed attention used by a time-series imputation model."""

    def __init__(self, d_model, n_heads, window):
        super().__init__()
        self.h, self.dk, self.window = n_heads, d_model // n_heads, window
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def _band_mask(self, length, device):
        idx = torch.arange(length, device=device)
        return (idx[None, :] - idx[:, None]).abs() > self.window

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.h, self.dk).permute(2, 0, 3, 1, 4)
        with torch.cuda.amp.autocast(enabled=False):  # expect: any
            scores = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(self.dk)
            scores = scores.masked_fill(self._band_mask(t, x.device), float("-inf"))
            attn = scores.softmax(dim=-1)
        ctx = (attn.to(v.dtype) @ v).transpose(1, 2).reshape(b, t, -1)
        return self.out(ctx)


class Imputer(nn.Module):
    def __init__(self, n_features, d_model=32, n_heads=4, window=4, n_layers=2):
        super().__init__()
        self.embed = nn.Linear(2 * n_features, d_model)
        self.layers = nn.ModuleList([LocalSelfAttention(d_model, n_heads, window) for _ in range(n_layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(n_layers)])
        self.proj = nn.Linear(d_model, n_features)

    def forward(self, values, mask):
        h = self.embed(torch.cat([values * mask, mask], dim=-1))
        for attn, norm in zip(self.layers, self.norms):
            h = norm(h + attn(h))
        recon = self.proj(h)
        return mask * values + (1 - mask) * recon, recon


def masked_mae(pred, target, mask):
    return (pred - target).abs().mul(mask).sum() / mask.sum().clamp(min=1.0)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    n_features, seq_len = 5, 24
    model = Imputer(n_features).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    series = torch.sin(torch.linspace(0, 12, seq_len))[None, :, None] * torch.ones(16, 1, n_features)
    series = (series + 0.05 * torch.randn_like(series)).to(device)
    for epoch in range(3):
        observed = (torch.rand_like(series) > 0.2).float()
        hold_out = (torch.rand_like(series) > 0.9).float() * observed
        input_mask = observed - hold_out
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            _, recon = model(series, input_mask)
            loss = masked_mae(recon.float(), series, input_mask) + masked_mae(recon.float(), series, hold_out)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
