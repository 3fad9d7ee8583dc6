import torch


def on_gpu(x: torch.Tensor):
    return x.device.type == "cuda" or x.device == torch.device("cuda:0")


class Autocast:
    def __init__(self, device: str):
        self.device = device

    def is_cuda(self):
        return self.device == "cuda"  # a device-type string, not a torch.device
