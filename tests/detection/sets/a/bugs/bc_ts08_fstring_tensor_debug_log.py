# source: https://discuss.pytorch.org/t/slow-training-time-due-to-synchronization-between-cpu-and-gpu/136097/2
# area: transfer & sync
# bug: log_step formats the CUDA loss tensor into an f-string every step (even though the DEBUG message is never emitted), which syncs the GPU each iteration
import logging

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO, format="%(message)s")
logger = logging.getLogger("train")
torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def log_step(step, loss, lr):
    msg = f"step {step:04d} | loss {loss:.4f} | lr {lr:.2e}"  # expect: any
    logger.debug(msg)


class Autoencoder(nn.Module):
    def __init__(self, d=32, z=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 16), nn.Tanh(), nn.Linear(16, z))
        self.dec = nn.Sequential(nn.Linear(z, 16), nn.Tanh(), nn.Linear(16, d))

    def forward(self, x):
        return self.dec(self.enc(x))


def train(model, loader, epochs=3):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
    step = 0
    for epoch in range(epochs):
        for (x,) in loader:
            x = x.to(device)
            loss = nn.functional.mse_loss(model(x), x)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            log_step(step, loss.detach(), sched.get_last_lr()[0])
        logger.info("finished epoch %d", epoch)


if __name__ == "__main__":
    data = torch.randn(256, 32)
    train(Autoencoder().to(device), DataLoader(TensorDataset(data), batch_size=32, shuffle=True))
