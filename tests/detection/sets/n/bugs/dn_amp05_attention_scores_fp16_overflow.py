# source: https://github.com/pytorch/pytorch/issues/119131
# area: AMP
# bug: q @ k^T on raw millimetre-scale point features runs in float16 under CUDA autocast; dot products above 65504 become inf and the softmax turns them into NaN
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class PointAttention(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, pad_mask=None):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = torch.matmul(q, k.transpose(-2, -1)) * self.scale  # expect: any
        if pad_mask is not None:
            attn = attn.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        attn = attn.softmax(dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, c)
        return self.proj(out)


class PointEncoder(nn.Module):
    """Encodes a LiDAR sweep given as xyz in millimetres plus intensity."""

    def __init__(self, dim=64, depth=2, num_classes=8):
        super().__init__()
        self.embed = nn.Linear(4, dim)
        self.blocks = nn.ModuleList(PointAttention(dim) for _ in range(depth))
        self.mlps = nn.ModuleList(nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))
                                  for _ in range(depth))
        self.head = nn.Linear(dim, num_classes)

    def forward(self, pts, pad_mask):
        h = self.embed(pts)
        for attn, mlp in zip(self.blocks, self.mlps):
            h = h + attn(h, pad_mask)
            h = h + mlp(h)
        h = h.masked_fill(pad_mask[..., None], 0.0)
        return self.head(h.sum(1) / (~pad_mask).sum(1, keepdim=True))


def synthetic_scans(batch, n_points, device):
    xyz = torch.rand(batch, n_points, 3, device=device) * 4000.0 - 2000.0
    intensity = torch.rand(batch, n_points, 1, device=device) * 255.0
    pts = torch.cat([xyz, intensity], dim=-1)
    lengths = torch.randint(n_points // 2, n_points + 1, (batch,), device=device)
    pad_mask = torch.arange(n_points, device=device)[None, :] >= lengths[:, None]
    labels = torch.randint(0, 8, (batch,), device=device)
    return pts, pad_mask, labels


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = PointEncoder().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for step in range(4):
        pts, pad_mask, labels = synthetic_scans(8, 96, device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(pts, pad_mask)
            loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print("final loss:", loss.item())


if __name__ == "__main__":
    main()
