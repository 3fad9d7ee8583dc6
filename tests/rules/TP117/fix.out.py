import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Scaler(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(n).to(device))
        self.shift = nn.Parameter(torch.zeros(n).cuda())
        self.mix = nn.Parameter(torch.ones(n) * 0.5).to(device)


def adversarial(x, device):
    delta = (torch.rand_like(x) - 0.5).to(device, non_blocking=True).requires_grad_(True)
    return torch.optim.SGD([delta], lr=0.01)
