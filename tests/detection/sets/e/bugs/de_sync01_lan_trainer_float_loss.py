# source: https://github.com/lnccbrown/LANfactory/pull/120
# area: transfer & sync
# bug: float(loss) on every training step forces a device->host copy and stalls the CUDA stream each batch
import torch
import torch.nn as nn
from dataclasses import dataclass
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class NetworkConfig:
    input_dim: int = 6
    hidden: tuple = (100, 100, 100)
    output_dim: int = 1
    learning_rate: float = 1e-3
    n_epochs: int = 3
    batch_size: int = 512


class LikelihoodNet(nn.Module):
    def __init__(self, cfg: NetworkConfig):
        super().__init__()
        dims = (cfg.input_dim,) + cfg.hidden
        layers = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [nn.Linear(a, b), nn.Tanh()]
        layers.append(nn.Linear(dims[-1], cfg.output_dim))
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


def simulate_training_data(n=4096, input_dim=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    theta = torch.rand(n, input_dim - 2, generator=g) * 2 - 1
    rt = torch.rand(n, 1, generator=g) * 3
    choice = torch.randint(0, 2, (n, 1), generator=g).float() * 2 - 1
    x = torch.cat([theta, rt, choice], dim=1)
    loglik = -(rt - theta[:, :1].abs()) ** 2 + 0.3 * choice * theta[:, 1:2]
    return x, loglik.clamp(min=-16.0)


class ModelTrainer:
    def __init__(self, model, cfg, device):
        self.model = model.to(device)
        self.cfg = cfg
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.learning_rate)
        self.loss_fn = nn.HuberLoss()
        self.history = []

    def train_epoch(self, loader):
        self.model.train()
        running = 0.0
        n_batches = 0
        for xb, yb in loader:
            xb = xb.to(self.device)
            yb = yb.to(self.device)
            self.optimizer.zero_grad(set_to_none=True)
            pred = self.model(xb)
            loss = self.loss_fn(pred, yb)
            loss.backward()
            self.optimizer.step()
            running += float(loss.detach())  # expect: any
            n_batches += 1
        return running / max(n_batches, 1)

    def fit(self, loader):
        for epoch in range(self.cfg.n_epochs):
            epoch_loss = self.train_epoch(loader)
            self.history.append(epoch_loss)
            print(f"epoch {epoch}: huber={epoch_loss:.4f}")
        return self.history


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = NetworkConfig()
    x, y = simulate_training_data(input_dim=cfg.input_dim)
    loader = DataLoader(TensorDataset(x, y), batch_size=cfg.batch_size, shuffle=True)
    trainer = ModelTrainer(LikelihoodNet(cfg), cfg, device)
    trainer.fit(loader)


if __name__ == "__main__":
    main()
