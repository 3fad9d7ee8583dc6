# source: https://github.com/Nerogar/OneTrainer/issues/1177
# area: dtype
# bug: the sampler casts every transformer input, including the integer-valued text/image position ids, to the bfloat16 train dtype; bfloat16 cannot hold ids above 256 exactly, so long prompts get mixed-up rotary positions on the GPU
import torch
import torch.nn as nn
from dataclasses import dataclass

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class SamplerConfig:
    train_dtype: torch.dtype = torch.bfloat16 if torch.cuda.is_available() else torch.float32
    text_len: int = 320
    latent_hw: int = 8
    dim: int = 32
    steps: int = 4


def rope(ids, dim, theta=10000.0):
    freqs = 1.0 / theta ** (torch.arange(0, dim, 2, device=ids.device, dtype=torch.float32) / dim)
    angles = ids.float().unsqueeze(-1) * freqs
    return torch.cos(angles), torch.sin(angles)


class MiniFluxTransformer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim
        self.txt_in = nn.Linear(16, dim)
        self.img_in = nn.Linear(4, dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, 4)

    def forward(self, img, txt, img_ids, txt_ids):
        x = torch.cat([self.txt_in(txt), self.img_in(img)], dim=1)
        ids = torch.cat([txt_ids, img_ids], dim=1)
        cos, sin = rope(ids, self.dim)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q1, q2 = q.float().chunk(2, dim=-1)
        k1, k2 = k.float().chunk(2, dim=-1)
        q = torch.cat([q1 * cos - q2 * sin, q1 * sin + q2 * cos], -1).to(x.dtype)
        k = torch.cat([k1 * cos - k2 * sin, k1 * sin + k2 * cos], -1).to(x.dtype)
        h = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.out(h[:, txt.shape[1]:])


class FluxSampler:
    def __init__(self, model, cfg):
        self.cfg = cfg
        self.model = model.to(device=device, dtype=cfg.train_dtype).eval()

    def prepare_ids(self, batch):
        hw = self.cfg.latent_hw
        rows = torch.arange(hw).repeat_interleave(hw)
        cols = torch.arange(hw).repeat(hw)
        img_ids = (rows * hw + cols).unsqueeze(0).expand(batch, -1)
        txt_ids = torch.arange(self.cfg.text_len).unsqueeze(0).expand(batch, -1)
        return img_ids.to(device), txt_ids.to(device)

    @torch.no_grad()
    def sample(self, prompt_embeds):
        dtype = self.cfg.train_dtype
        batch = prompt_embeds.shape[0]
        img_ids, txt_ids = self.prepare_ids(batch)
        latents = torch.randn(batch, self.cfg.latent_hw ** 2, 4, device=device)
        for step in range(self.cfg.steps):
            pred = self.model(
                img=latents.to(dtype),
                txt=prompt_embeds.to(dtype),
                img_ids=img_ids.to(dtype),  # expect[ids]: any
                txt_ids=txt_ids.to(dtype),  # expect[ids]: any
            )
            latents = latents - pred.float() / self.cfg.steps
        return latents


if __name__ == "__main__":
    torch.manual_seed(0)
    cfg = SamplerConfig()
    sampler = FluxSampler(MiniFluxTransformer(cfg.dim), cfg)
    prompts = torch.randn(2, cfg.text_len, 16, device=device)
    out = sampler.sample(prompts)
    print("sampled", tuple(out.shape), out.abs().mean().item())
