# source: https://github.com/mosaicml/composer/pull/1376
# area: AMP
# bug: the trainer restores the checkpoint in __init__ but only creates the GradScaler later in fit(), so on a GPU the saved loss scale and growth tracker are silently dropped and the resumed run restarts from scale 65536
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer, device, precision="amp", load_path=None):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.device = device
        self.precision = precision
        self.use_amp = precision == "amp" and device.type == "cuda"
        self.scaler = None
        self.timestep = 0
        if load_path is not None:
            self.load_checkpoint(load_path)

    def state_dict(self):
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "timestep": self.timestep}
        if self.scaler is not None:
            state["scaler"] = self.scaler.state_dict()
        return state

    def save_checkpoint(self, path):
        torch.save(self.state_dict(), path)

    def load_checkpoint(self, path):
        ckpt = torch.load(path, map_location=self.device)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.timestep = ckpt["timestep"]
        if self.scaler is not None and "scaler" in ckpt:
            self.scaler.load_state_dict(ckpt["scaler"])

    def fit(self, batches):
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)  # expect: any
        self.model.train()
        for x, y in batches:
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
                loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.timestep += 1
        return loss.detach()


def build(device):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, opt


def make_batches(n, device_pin):
    data = []
    for _ in range(n):
        x = torch.randn(16, 3, 32, 32)
        y = torch.randint(0, 10, (16,))
        if device_pin:
            x, y = x.pin_memory(), y.pin_memory()
        data.append((x, y))
    return data


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    pin = device.type == "cuda"
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "ep1.pt")
        model, opt = build(device)
        first = Trainer(model, opt, device)
        first.fit(make_batches(8, pin))
        first.save_checkpoint(ckpt)

        model, opt = build(device)
        resumed = Trainer(model, opt, device, load_path=ckpt)
        loss = resumed.fit(make_batches(8, pin))
        print("resumed at step", resumed.timestep, "loss", float(loss),
              "scale", resumed.scaler.get_scale() if resumed.use_amp else 1.0)


if __name__ == "__main__":
    main()
