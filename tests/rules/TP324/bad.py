import torch


class Trainer:
    def __init__(self, model, device):
        self.model, self.device = model.to(device), device

    def step(self, x):
        with torch.autocast(device_type=str(self.device), dtype=torch.float16):
            return self.model(x.to(self.device))

    def evaluate(self, x):
        with torch.autocast(f"{self.device}", dtype=torch.bfloat16):
            return self.model(x.to(self.device))


def autocast_for(device: torch.device, dtype: torch.dtype):
    """A helper returning the context a caller enters."""
    return torch.autocast(device, dtype=dtype)


LOCAL_RANK = 0
DEVICE = f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu"


def train_step(model, x):
    with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
        return model(x.to(DEVICE))
