# source: https://github.com/SamLynnEvans/Transformer/issues/27
# area: device placement
# bug: the no-peek mask is built from numpy on the CPU and the .cuda() result is thrown away, so trg_mask & np_mask mixes a CUDA and a CPU tensor
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class Opt:
    src_pad: int = 0
    trg_pad: int = 0
    vocab: int = 40
    d_model: int = 32
    heads: int = 4
    lr: float = 3e-4
    batch_size: int = 16
    max_len: int = 12


def nopeak_mask(size):
    np_mask = np.triu(np.ones((1, size, size)), k=1).astype("uint8")
    return torch.from_numpy(np_mask) == 0  # expect[m]: any


def create_masks(src, trg, opt):
    src_mask = (src != opt.src_pad).unsqueeze(-2)
    trg_mask = None
    if trg is not None:
        trg_mask = (trg != opt.trg_pad).unsqueeze(-2)
        np_mask = nopeak_mask(trg.size(1))
        if trg.is_cuda:
            np_mask.cuda()  # expect[m]: any
        trg_mask = trg_mask & np_mask
    return src_mask, trg_mask


def attention(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)
    return F.softmax(scores, dim=-1) @ v


class MultiHead(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.h, self.dk = heads, d_model // heads
        self.qkv = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(3)])
        self.out = nn.Linear(d_model, d_model)

    def forward(self, q, k, v, mask):
        bs = q.size(0)
        q, k, v = [l(x).view(bs, -1, self.h, self.dk).transpose(1, 2) for l, x in zip(self.qkv, (q, k, v))]
        return self.out(attention(q, k, v, mask).transpose(1, 2).reshape(bs, -1, self.h * self.dk))


class TinyTransformer(nn.Module):
    def __init__(self, opt):
        super().__init__()
        self.embed = nn.Embedding(opt.vocab, opt.d_model)
        self.enc_attn = MultiHead(opt.d_model, opt.heads)
        self.dec_self = MultiHead(opt.d_model, opt.heads)
        self.dec_cross = MultiHead(opt.d_model, opt.heads)
        self.out = nn.Linear(opt.d_model, opt.vocab)

    def forward(self, src, trg, src_mask, trg_mask):
        e = self.embed(src)
        e = e + self.enc_attn(e, e, e, src_mask)
        d = self.embed(trg)
        d = d + self.dec_self(d, d, d, trg_mask)
        d = d + self.dec_cross(d, e, e, src_mask)
        return self.out(d)


def train_model(model, opt, steps=20):
    optim = torch.optim.Adam(model.parameters(), lr=opt.lr, betas=(0.9, 0.98), eps=1e-9)
    g = torch.Generator().manual_seed(0)
    total = torch.zeros((), device=device)
    for _ in range(steps):
        src = torch.randint(1, opt.vocab, (opt.batch_size, opt.max_len), generator=g).to(device)
        trg = torch.cat([torch.ones_like(src[:, :1]), src], dim=1)
        trg_input, ys = trg[:, :-1], trg[:, 1:].reshape(-1)
        src_mask, trg_mask = create_masks(src, trg_input, opt)
        preds = model(src, trg_input, src_mask, trg_mask)
        loss = F.cross_entropy(preds.view(-1, preds.size(-1)), ys, ignore_index=opt.trg_pad)
        optim.zero_grad()
        loss.backward()
        optim.step()
        total += loss.detach()
    return total / steps


if __name__ == "__main__":
    torch.manual_seed(0)
    opt = Opt()
    model = TinyTransformer(opt).to(device)
    print(f"mean train loss: {train_model(model, opt).item():.3f}")
