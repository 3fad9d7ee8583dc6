# twin of: bugs/df_dist09_no_sync_backward_only.py
# area: porting & distributed
# correct: no_sync() wraps both forward and backward of the non-final micro-steps, so DDP all-reduces gradients once per optimizer step
import contextlib
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class VLAConfig:
    img_feat: int = 64
    text_feat: int = 32
    action_dim: int = 7
    hidden: int = 128
    micro_batch: int = 8
    grad_accum: int = 4
    steps: int = 3
    lr: float = 1e-4


class ActionPolicy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.vision = nn.Linear(cfg.img_feat, cfg.hidden)
        self.language = nn.Linear(cfg.text_feat, cfg.hidden)
        self.fuse = nn.Sequential(nn.GELU(), nn.Linear(cfg.hidden, cfg.hidden), nn.GELU())
        self.head = nn.Linear(cfg.hidden, cfg.action_dim)

    def forward(self, img, text):
        return self.head(self.fuse(self.vision(img) + self.language(text)))


class VLATrainer:
    def __init__(self, cfg, device, local_rank):
        self.cfg, self.device = cfg, device
        model = ActionPolicy(cfg).to(device)
        self.model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)

    def _micro_batch(self):
        c = self.cfg
        img = torch.randn(c.micro_batch, c.img_feat, device=self.device)
        text = torch.randn(c.micro_batch, c.text_feat, device=self.device)
        actions = torch.tanh(torch.randn(c.micro_batch, c.action_dim, device=self.device))
        return img, text, actions

    def _grad_sync_ctx(self, sync):
        return contextlib.nullcontext() if sync else self.model.no_sync()

    def train_step(self):
        self.opt.zero_grad(set_to_none=True)
        total = torch.zeros((), device=self.device)
        for micro in range(self.cfg.grad_accum):
            img, text, actions = self._micro_batch()
            with self._grad_sync_ctx(sync=(micro == self.cfg.grad_accum - 1)):
                loss = F.mse_loss(self.model(img, text), actions)
                (loss / self.cfg.grad_accum).backward()
            total += loss.detach()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        return total / self.cfg.grad_accum


def init():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if use_cuda else "gloo")
    return (torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")), local_rank


def main(cfg=VLAConfig()):
    device, local_rank = init()
    trainer = VLATrainer(cfg, device, local_rank)
    losses = [trainer.train_step() for _ in range(cfg.steps)]
    if dist.get_rank() == 0:
        print("losses:", [round(v, 4) for v in torch.stack(losses).tolist()])
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
