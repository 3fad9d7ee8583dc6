# source: https://github.com/Lightning-AI/torchmetrics/issues/2638
# area: transfer & sync
# bug: the on_train_batch_end metric callback converts predictions and targets with .tolist() after every training batch, a blocking GPU->CPU sync in the hot loop
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Callback:
    def on_train_batch_end(self, trainer, outputs, batch):
        pass

    def on_epoch_end(self, trainer, epoch):
        pass


class F1Callback(Callback):
    def __init__(self, num_classes):
        self.num_classes = num_classes
        self.preds, self.targets = [], []

    def on_train_batch_end(self, trainer, outputs, batch):
        self.preds.extend(outputs["logits"].argmax(-1).tolist())  # expect[cb]: any
        self.targets.extend(batch[1].tolist())  # expect[cb]: any

    def on_epoch_end(self, trainer, epoch):
        f1s = []
        for c in range(self.num_classes):
            tp = sum(p == c and t == c for p, t in zip(self.preds, self.targets))
            fp = sum(p == c and t != c for p, t in zip(self.preds, self.targets))
            fn = sum(p != c and t == c for p, t in zip(self.preds, self.targets))
            f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
        print(f"epoch {epoch} macro-F1 {sum(f1s) / len(f1s):.3f}")
        self.preds, self.targets = [], []


class Trainer:
    def __init__(self, model, callbacks):
        self.model = model.to(device)
        self.callbacks = callbacks
        self.opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for batch in loader:
                batch = [t.to(device) for t in batch]
                logits = self.model(batch[0])
                loss = nn.functional.cross_entropy(logits, batch[1])
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                for cb in self.callbacks:
                    cb.on_train_batch_end(self, {"loss": loss.detach(), "logits": logits.detach()}, batch)
            for cb in self.callbacks:
                cb.on_epoch_end(self, epoch)


def main():
    x = torch.randn(300, 16)
    y = (x[:, 0] + x[:, 1] > 0).long() + (x[:, 2] > 1).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=30, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3))
    Trainer(model, [F1Callback(3)]).fit(loader, epochs=3)


if __name__ == "__main__":
    main()
