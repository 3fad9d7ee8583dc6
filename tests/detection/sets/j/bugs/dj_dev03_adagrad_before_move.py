# source: https://github.com/lanl/hippynn/pull/15
# area: device placement
# bug: Adagrad allocates its 'sum' state eagerly when constructed, so building it before the model is moved leaves that state on the CPU and step() fails on a GPU
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class TrainingConfig:
    n_features: int = 24
    hidden: int = 64
    lr: float = 5e-2
    epochs: int = 4
    batch_size: int = 32
    n_train: int = 512


class EnergyMLP(nn.Module):
    def __init__(self, n_features, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_features, hidden), nn.Softplus(),
            nn.Linear(hidden, hidden), nn.Softplus(),
            nn.Linear(hidden, 1),
        )

    def forward(self, descriptors):
        return self.net(descriptors).squeeze(-1)


class Controller:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg
        self.optimizer = torch.optim.Adagrad(model.parameters(), lr=cfg.lr, initial_accumulator_value=0.1)  # expect[w]: any
        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=2, gamma=0.5)
        self.loss_fn = nn.MSELoss()
        self.device = torch.device("cpu")

    def set_devices(self, device):
        self.device = device
        self.model.to(device)  # expect[w]: any

    def train_epoch(self, loader):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for x, y in loader:
            x = x.to(self.device, non_blocking=True)
            y = y.to(self.device, non_blocking=True)
            loss = self.loss_fn(self.model(x), y)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.detach() * x.size(0)
        self.scheduler.step()
        return total / len(loader.dataset)


def make_dataset(cfg, generator):
    x = torch.randn(cfg.n_train, cfg.n_features, generator=generator)
    w = torch.randn(cfg.n_features, generator=generator)
    energy = torch.tanh(x @ w / cfg.n_features ** 0.5) + 0.05 * (x ** 2).sum(-1) / cfg.n_features
    return torch.utils.data.TensorDataset(x, energy)


def main():
    torch.manual_seed(0)
    cfg = TrainingConfig()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = make_dataset(cfg, torch.Generator().manual_seed(3))
    loader = torch.utils.data.DataLoader(dataset, batch_size=cfg.batch_size, shuffle=True,
                                         pin_memory=torch.cuda.is_available())

    model = EnergyMLP(cfg.n_features, cfg.hidden)
    controller = Controller(model, cfg)
    controller.set_devices(device)

    history = []
    for epoch in range(cfg.epochs):
        history.append(controller.train_epoch(loader))
    print("epoch losses:", [round(v.item(), 4) for v in history])


if __name__ == "__main__":
    main()
