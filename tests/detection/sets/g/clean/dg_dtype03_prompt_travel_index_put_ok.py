# twin of: bugs/dg_dtype03_prompt_travel_index_put.py
# area: dtype
# correct: the conditioning buffer is allocated with the dtype of the keyframe embeddings, so the index_put matches under CUDA autocast too
import torch
import torch.nn as nn
from dataclasses import dataclass, field


@dataclass
class TravelConfig:
    num_frames: int = 16
    seq_len: int = 8
    vocab: int = 200
    dim: int = 64
    steps: int = 4
    keyframes: dict = field(default_factory=lambda: {0: [5, 17, 33], 7: [9, 81, 4], 15: [120, 6, 77]})


class TextEncoder(nn.Module):
    def __init__(self, vocab, dim, seq_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq_len, dim) * 0.02)
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, ids):
        return self.proj(self.tok(ids) + self.pos)


class FrameDenoiser(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)
        self.out = nn.Linear(dim, dim)

    def forward(self, latents, cond):
        h, _ = self.attn(latents, cond, cond)
        return self.out(h)


def pad_ids(ids, seq_len):
    return ids + [0] * (seq_len - len(ids))


def build_frame_conditioning(encoder, cfg, device):
    key_idx = torch.tensor(sorted(cfg.keyframes), device=device)
    ids = torch.tensor([pad_ids(cfg.keyframes[k], cfg.seq_len) for k in sorted(cfg.keyframes)], device=device)
    key_cond = encoder(ids)
    cond = torch.zeros(cfg.num_frames, cfg.seq_len, cfg.dim, device=device, dtype=key_cond.dtype)
    cond[key_idx] = key_cond
    keys = sorted(cfg.keyframes)
    for left, right in zip(keys[:-1], keys[1:]):
        span = right - left
        for f in range(left + 1, right):
            w = (f - left) / span
            cond[f] = torch.lerp(cond[left], cond[right], w)
    return cond


@torch.no_grad()
def generate(encoder, denoiser, cfg, device, use_amp):
    latents = torch.randn(cfg.num_frames, cfg.seq_len, cfg.dim, device=device)
    with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
        cond = build_frame_conditioning(encoder, cfg, device)
        for step in range(cfg.steps):
            noise_pred = denoiser(latents, cond)
            latents = latents - (1.0 / cfg.steps) * noise_pred.float()
    return latents


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    cfg = TravelConfig()
    encoder = TextEncoder(cfg.vocab, cfg.dim, cfg.seq_len).to(device).eval()
    denoiser = FrameDenoiser(cfg.dim).to(device).eval()
    frames = generate(encoder, denoiser, cfg, device, use_amp)
    spread = frames.std(dim=(1, 2)).cpu()
    print("frames:", tuple(frames.shape), "per-frame std range:", round(spread.min().item(), 4), round(spread.max().item(), 4))


if __name__ == "__main__":
    main()
