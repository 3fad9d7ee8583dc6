# source: https://github.com/atomistic-machine-learning/schnetpack/issues/126
# area: device placement
# bug: the trainer restores the Adam state while the model is still on the CPU, then moves only the model to the GPU, so exp_avg stays on the CPU
import os
import tempfile

import torch
import torch.nn as nn


class AtomwiseEnergyModel(nn.Module):
    def __init__(self, n_species=10, n_features=32):
        super().__init__()
        self.embedding = nn.Embedding(n_species, n_features)
        self.interaction = nn.Sequential(nn.Linear(n_features + 3, n_features), nn.SiLU(),
                                         nn.Linear(n_features, n_features), nn.SiLU())
        self.readout = nn.Linear(n_features, 1)

    def forward(self, species, positions):
        h = torch.cat([self.embedding(species), positions], dim=-1)
        return self.readout(self.interaction(h)).sum(dim=(1, 2))


class Trainer:
    def __init__(self, model_path, model, optimizer, loss_fn, train_data):
        self.model_path = model_path
        self.checkpoint_path = os.path.join(model_path, "checkpoint.pth.tar")
        self._model = model
        self._optimizer = optimizer
        self.loss_fn = loss_fn
        self.train_data = train_data
        self.epoch = 0
        if os.path.exists(self.checkpoint_path):
            self.restore_checkpoint()

    def state_dict(self):
        return {"epoch": self.epoch, "model": self._model.state_dict(),
                "optimizer": self._optimizer.state_dict()}

    def store_checkpoint(self):
        torch.save(self.state_dict(), self.checkpoint_path)

    def restore_checkpoint(self):
        state = torch.load(self.checkpoint_path, map_location="cpu")
        self.epoch = state["epoch"]
        self._model.load_state_dict(state["model"])
        self._optimizer.load_state_dict(state["optimizer"])  # expect[w]: any

    def train(self, device, n_epochs):
        self._model.to(device)  # expect[w]: any
        for _ in range(n_epochs):
            self._model.train()
            running = torch.zeros((), device=device)
            for species, positions, energy in self.train_data:
                species, positions, energy = species.to(device), positions.to(device), energy.to(device)
                self._optimizer.zero_grad()
                loss = self.loss_fn(self._model(species, positions), energy)
                loss.backward()
                self._optimizer.step()
                running += loss.detach()
            self.epoch += 1
            self.store_checkpoint()
            print(f"epoch {self.epoch}: mse {running.item() / len(self.train_data):.4f}")


def make_batches(n_batches=6, batch=8, atoms=12):
    g = torch.Generator().manual_seed(1)
    out = []
    for _ in range(n_batches):
        species = torch.randint(0, 10, (batch, atoms), generator=g)
        positions = torch.randn(batch, atoms, 3, generator=g)
        energy = positions.pow(2).sum(dim=(1, 2)) * 0.1
        out.append((species, positions, energy))
    return out


def run_session(model_path, device, n_epochs):
    model = AtomwiseEnergyModel()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    trainer = Trainer(model_path, model, optimizer, nn.MSELoss(), make_batches())
    trainer.train(device, n_epochs)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as model_path:
        run_session(model_path, device, n_epochs=2)
        run_session(model_path, device, n_epochs=2)


if __name__ == "__main__":
    main()
