import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Encoder(nn.Module):
    def __init__(self, dim=16, apply_masking=False):
        super().__init__()
        self.apply_masking = apply_masking
        self.proj = nn.Linear(dim, dim)
        self.mask_embed = nn.Parameter(torch.zeros(dim))
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        h = self.proj(x) * self.scale  # always read
        if self.training and self.apply_masking:
            mask = torch.rand(h.shape[:2], device=h.device) < 0.1
            h = torch.where(mask.unsqueeze(-1), self.mask_embed, h)
        return h


def build(rank):
    # the masking is turned on where the class is made
    return DDP(Encoder(apply_masking=True).cuda(rank), device_ids=[rank])
