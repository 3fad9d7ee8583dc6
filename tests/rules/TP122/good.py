from dataclasses import dataclass

import torch


@dataclass
class Config:
    device: str = "cuda:0" if torch.cuda.is_available() else "cpu"


class Trainer:
    def __init__(self, model, device):
        self.model, self.device = model.to(device), device
        self.amp_type = torch.device(self.device).type


def setup(cfg: Config):
    use_pinned = torch.device(cfg.device).type == "cuda"
    return use_pinned


def pick(device_type: str):
    device = "cuda"  # a device type by contract
    return device_type == "cuda" or device == "cuda"


def same_gpu(a, b):
    return (str(a.device) == "cuda:0" or str(a.device) == "cuda") and str(b.device) != "cpu"
