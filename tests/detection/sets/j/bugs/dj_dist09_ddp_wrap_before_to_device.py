# source: https://github.com/pytorch/pytorch/issues/14187
# area: porting & distributed
# bug: the model is wrapped in DDP with device_ids=[local_rank] while its parameters are still on the CPU (it is moved to the GPU only afterwards), which DDP rejects on a GPU launch
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


@dataclass
class KWSConfig:
    n_mels: int = 40
    n_keywords: int = 12
    channels: int = 64
    lr: float = 1e-3
    steps: int = 10
    batch_size: int = 16


class KeywordSpotter(nn.Module):
    """Small 1-D conv net over log-mel frames."""

    def __init__(self, cfg: KWSConfig):
        super().__init__()
        c = cfg.channels
        self.conv = nn.Sequential(
            nn.Conv1d(cfg.n_mels, c, 5, padding=2), nn.BatchNorm1d(c), nn.ReLU(),
            nn.Conv1d(c, c, 5, padding=2, dilation=1), nn.BatchNorm1d(c), nn.ReLU(),
            nn.Conv1d(c, c, 3, padding=2, dilation=2), nn.BatchNorm1d(c), nn.ReLU(),
        )
        self.classifier = nn.Linear(c, cfg.n_keywords)

    def forward(self, mels):
        h = self.conv(mels)
        return self.classifier(h.mean(dim=-1))


def log_mel_batch(batch, n_mels, frames=101):
    wave_energy = torch.rand(batch, n_mels, frames) + 1e-3
    return torch.log(wave_energy)


def build_model(cfg, local_rank, distributed):
    model = KeywordSpotter(cfg)
    if distributed:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = DDP(model, device_ids=[local_rank], output_device=local_rank)  # expect: any
    return model


def main():
    cfg = KWSConfig()
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if distributed:
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    model = build_model(cfg, local_rank, distributed).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    crit = nn.CrossEntropyLoss(label_smoothing=0.1)

    running = torch.zeros((), device=device)
    for _ in range(cfg.steps):
        mels = log_mel_batch(cfg.batch_size, cfg.n_mels).to(device)
        labels = torch.randint(0, cfg.n_keywords, (cfg.batch_size,), device=device)
        loss = crit(model(mels), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    if not distributed or dist.get_rank() == 0:
        print(f"mean loss over {cfg.steps} steps: {(running / cfg.steps).item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
