import torch


class Trainer:
    def __init__(self, model, device):
        self.model, self.device = model.to(device), device

    def step(self, x):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16):
            return self.model(x.to(self.device))

    def evaluate(self, x, kind="cuda"):
        with torch.autocast(kind, dtype=torch.bfloat16):
            return self.model(x.to(self.device))


def autocast_for(device: torch.device, dtype: torch.dtype, enabled: bool):
    """A helper returning the context a caller enters."""
    return torch.autocast(device.type, dtype=dtype, enabled=enabled)


LOCAL_RANK = 0
DEVICE = f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu"
DEVICE_TYPE = "cuda" if DEVICE.startswith("cuda") else "cpu"


def train_step(model, x):
    with torch.autocast(device_type=DEVICE_TYPE, dtype=torch.bfloat16):
        return model(x.to(DEVICE))
