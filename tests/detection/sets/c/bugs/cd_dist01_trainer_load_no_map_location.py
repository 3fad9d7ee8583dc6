# source: https://github.com/lucidrains/imagen-pytorch/pull/132
# area: porting & distributed
# bug: torch.load has no map_location, so every rank deserializes the checkpoint onto cuda:0 (where rank 0 saved it) before copying it to its own GPU
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainerConfig:
    image_size: int = 16
    channels: int = 3
    timesteps: int = 50
    lr: float = 2e-4
    batch_size: int = 8
    steps: int = 4


class TinyDenoiser(nn.Module):
    def __init__(self, channels, hidden=32, max_t=1000):
        super().__init__()
        self.time_embed = nn.Embedding(max_t, hidden)
        self.inp = nn.Conv2d(channels, hidden, 3, padding=1)
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, channels, 3, padding=1)

    def forward(self, x, t):
        h = F.silu(self.inp(x))
        h = h + self.time_embed(t)[:, :, None, None]
        h = F.silu(self.mid(h))
        return self.out(h)


class DiffusionTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.is_main = int(os.environ.get("RANK", 0)) == 0
        if torch.cuda.is_available():
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        self.model = TinyDenoiser(cfg.channels).to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        betas = torch.linspace(1e-4, 0.02, cfg.timesteps, device=self.device)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.step = 0

    def train_step(self, images):
        t = torch.randint(0, self.cfg.timesteps, (images.shape[0],), device=self.device)
        noise = torch.randn_like(images)
        a = self.alphas_cumprod[t].view(-1, 1, 1, 1)
        noisy = a.sqrt() * images + (1 - a).sqrt() * noise
        loss = F.mse_loss(self.model(noisy, t), noise)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.step += 1
        return loss.detach()

    def save(self, path):
        if not self.is_main:
            return
        state = {"model": self.model.state_dict(), "optim": self.opt.state_dict(), "step": self.step}
        torch.save(state, str(path))

    def load(self, path):
        path = Path(path)
        assert path.exists(), f"checkpoint {path} not found"
        loaded = torch.load(str(path))  # expect: any
        self.model.load_state_dict(loaded["model"])
        self.opt.load_state_dict(loaded["optim"])
        self.step = loaded["step"]
        return loaded


def sync():
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def main():
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    cfg = TrainerConfig()
    ckpt_dir = os.environ.get("CKPT_DIR") or os.path.join(tempfile.gettempdir(), "imagen_ckpt")
    os.makedirs(ckpt_dir, exist_ok=True)
    ckpt = Path(ckpt_dir) / "model.pt"

    trainer = DiffusionTrainer(cfg)
    losses = []
    for _ in range(cfg.steps):
        images = torch.rand(cfg.batch_size, cfg.channels, cfg.image_size, cfg.image_size, device=trainer.device) * 2 - 1
        losses.append(trainer.train_step(images))
    trainer.save(ckpt)
    sync()

    resumed = DiffusionTrainer(cfg)
    resumed.load(ckpt)
    if resumed.is_main:
        print(f"resumed at step {resumed.step}, mean loss {torch.stack(losses).mean().item():.4f}")
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
