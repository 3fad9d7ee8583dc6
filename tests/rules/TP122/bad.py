import os
from dataclasses import dataclass

import torch


@dataclass
class Config:
    device: str = "cuda:0" if torch.cuda.is_available() else "cpu"


class Trainer:
    def __init__(self, model, device):
        self.model, self.device = model.to(device), device
        self.amp_type = "cuda" if str(self.device) == "cuda" else "cpu"


def setup(cfg: Config):
    use_pinned = cfg.device == "cuda"
    return use_pinned


def worker():
    device = f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    if device != "cuda":
        print("no autocast")
