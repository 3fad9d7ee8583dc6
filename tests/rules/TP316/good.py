import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)


def evaluate(x):
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        return model(x.to(device))


def on_cuda(x):
    with torch.autocast("cuda", dtype=torch.float16):
        return model(x.to(device))


def cpu_only_script_part():
    cpu_model = nn.Linear(4, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return cpu_model(torch.randn(3, 4))


def amp_context(device, enabled):
    # CUDA's autocast on a GPU; the CPU's (off) only where there is none
    if torch.device(device).type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.float16, enabled=enabled)
    return torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False)


def amp_region(device):
    if device.type == "cuda":
        region = torch.autocast("cuda", dtype=torch.float16)
    else:
        region = torch.autocast("cpu", dtype=torch.bfloat16)
    return region
