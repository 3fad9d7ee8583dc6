# source: https://github.com/tatp22/multidim-positional-encoding/pull/31
# area: device placement
# bug: the positional encoding cache is a plain tensor attribute keyed only on shape, so the CPU copy from the dry run is returned after model.to(device)
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class Config:
    in_ch: int = 3
    dim: int = 32
    patch: int = 4
    img: int = 32
    n_classes: int = 6
    batch_size: int = 8
    steps: int = 15


class PositionalEncoding2D(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.org_channels = channels
        channels = int(2 * ((channels + 3) // 4))
        self.channels = channels
        inv_freq = 1.0 / (10000 ** (torch.arange(0, channels, 2).float() / channels))
        self.register_buffer("inv_freq", inv_freq)
        self.cached_penc = None

    @staticmethod
    def _emb(sin_inp):
        return torch.flatten(torch.stack((sin_inp.sin(), sin_inp.cos()), dim=-1), -2, -1)

    def forward(self, tensor):
        if self.cached_penc is not None and self.cached_penc.shape == tensor.shape:
            return self.cached_penc  # expect[p]: any
        b, x, y, orig_ch = tensor.shape
        pos_x = torch.arange(x, device=tensor.device, dtype=self.inv_freq.dtype)
        pos_y = torch.arange(y, device=tensor.device, dtype=self.inv_freq.dtype)
        emb_x = self._emb(torch.outer(pos_x, self.inv_freq)).unsqueeze(1)
        emb_y = self._emb(torch.outer(pos_y, self.inv_freq))
        emb = torch.zeros((x, y, self.channels * 2), device=tensor.device, dtype=tensor.dtype)
        emb[:, :, : self.channels] = emb_x
        emb[:, :, self.channels:] = emb_y
        self.cached_penc = emb[None, :, :, :orig_ch].repeat(b, 1, 1, 1)
        return self.cached_penc


class Summer(nn.Module):
    def __init__(self, penc):
        super().__init__()
        self.penc = penc

    def forward(self, tensor):
        penc = self.penc(tensor)
        return tensor + penc  # expect[p]: any


class PatchClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Conv2d(cfg.in_ch, cfg.dim, cfg.patch, stride=cfg.patch)
        self.pos = Summer(PositionalEncoding2D(cfg.dim))
        layer = nn.TransformerEncoderLayer(cfg.dim, 4, 2 * cfg.dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(cfg.dim, cfg.n_classes)

    def forward(self, img):
        x = self.embed(img).permute(0, 2, 3, 1)
        x = self.pos(x)
        x = self.encoder(x.flatten(1, 2))
        return self.head(x.mean(1))


def describe(model, cfg):
    n_params = sum(p.numel() for p in model.parameters())
    with torch.no_grad():
        out = model(torch.zeros(cfg.batch_size, cfg.in_ch, cfg.img, cfg.img))
    print(f"params={n_params} output={tuple(out.shape)}")


def train(model, cfg, device):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    total = torch.zeros((), device=device)
    for _ in range(cfg.steps):
        img = torch.randn(cfg.batch_size, cfg.in_ch, cfg.img, cfg.img, device=device)
        y = torch.randint(0, cfg.n_classes, (cfg.batch_size,), device=device)
        loss = nn.functional.cross_entropy(model(img), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.detach()
    return total / cfg.steps


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = Config()
    model = PatchClassifier(cfg)
    describe(model, cfg)
    model.to(device)
    print("mean train loss:", train(model, cfg, device).item())
