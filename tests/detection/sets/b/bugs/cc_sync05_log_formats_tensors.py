# source: https://github.com/pytorch/pytorch/pull/126829
# area: transfer & sync
# bug: the per-step logging helper formats device tensors (loss, grad norm) into a string on every call, and every f-string format of a CUDA tensor is a blocking GPU->CPU read
import math
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Autoencoder(nn.Module):
    def __init__(self, d=32, z=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Linear(16, z))
        self.dec = nn.Sequential(nn.Linear(z, 16), nn.Tanh(), nn.Linear(16, d))

    def forward(self, x):
        return self.dec(self.enc(x))


class RunLogger:
    def __init__(self):
        self.lines = []

    def log_step(self, step, loss, grad_norm, lr):
        line = f"step={step:04d} loss={loss:.5f} gnorm={grad_norm:.3f} lr={lr:.2e}"  # expect: any
        self.lines.append(line)

    def dump(self, every=25):
        for line in self.lines[::every]:
            print(line)


def cosine_lr(step, total, base=1e-2):
    return base * 0.5 * (1 + math.cos(math.pi * step / total))


def main():
    data = torch.randn(512, 32)
    loader = DataLoader(TensorDataset(data), batch_size=32, shuffle=True)
    model = Autoencoder().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    logger = RunLogger()
    total_steps = 3 * len(loader)
    step = 0
    for _ in range(3):
        for (x,) in loader:
            x = x.to(device)
            lr = cosine_lr(step, total_steps)
            for g in opt.param_groups:
                g["lr"] = lr
            loss = nn.functional.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            logger.log_step(step, loss.detach(), gnorm, lr)
            step += 1
    logger.dump()


if __name__ == "__main__":
    main()
