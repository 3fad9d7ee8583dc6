# source: https://github.com/TRI-ML/packnet-sfm/pull/51
# area: transfer & sync
# bug: the history callback appends the live loss tensor (with its graph, on the GPU) to a list every step instead of a detached value
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Callback:
    def on_step_end(self, step, outputs):
        pass

    def on_epoch_end(self, epoch):
        pass


class LossHistory(Callback):
    def __init__(self):
        self.history = []
        self.epoch_means = []

    def on_step_end(self, step, outputs):
        self.history.append(outputs["loss"])  # expect: any

    def on_epoch_end(self, epoch):
        mean = torch.stack(self.history).mean().item()
        self.epoch_means.append(mean)
        print(f"epoch {epoch}: loss {mean:.4f} over {len(self.history)} steps")
        self.history = []


class ConvNet(nn.Module):
    def __init__(self, n_cls=5):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.fc = nn.Linear(8 * 16, n_cls)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class Trainer:
    def __init__(self, model, optimizer, callbacks):
        self.model = model
        self.optimizer = optimizer
        self.callbacks = callbacks

    def training_step(self, batch):
        x, y = (t.to(device) for t in batch)
        logits = self.model(x)
        return {"loss": nn.functional.cross_entropy(logits, y), "logits": logits}

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for step, batch in enumerate(loader):
                outputs = self.training_step(batch)
                self.optimizer.zero_grad()
                outputs["loss"].backward()
                self.optimizer.step()
                for cb in self.callbacks:
                    cb.on_step_end(step, outputs)
            for cb in self.callbacks:
                cb.on_epoch_end(epoch)


if __name__ == "__main__":
    data = TensorDataset(torch.randn(160, 1, 12, 12), torch.randint(0, 5, (160,)))
    model = ConvNet().to(device)
    trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.05), [LossHistory()])
    trainer.fit(DataLoader(data, batch_size=16, shuffle=True), epochs=2)
