import torch


def on_gpu(x: torch.Tensor):
    if x.device == torch.device("cuda"):
        return True
    return x.device != "cuda"
