import torch


def on_gpu(x: torch.Tensor):
    if x.device.type == "cuda":
        return True
    return x.device.type != "cuda"
