# source: https://github.com/vllm-project/vllm-omni/pull/1614
# area: transfer & sync
# bug: the confusion-matrix eval helper calls .item() on GPU tensors per sample inside a nested loop, one device sync per element
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
N_CLS = 4


class MLP(nn.Module):
    def __init__(self, d_in=12, n_cls=N_CLS):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d_in, 48), nn.ReLU(), nn.Dropout(0.1), nn.Linear(48, n_cls))

    def forward(self, x):
        return self.layers(x)


@torch.no_grad()
def confusion_matrix(model, loader, n_cls=N_CLS):
    model.eval()
    cm = [[0] * n_cls for _ in range(n_cls)]
    for x, y in loader:
        pred = model(x.to(device)).argmax(dim=1)
        y = y.to(device)
        for i in range(y.size(0)):
            cm[y[i].item()][pred[i].item()] += 1  # expect: any
    return cm


def per_class_recall(cm):
    return [row[c] / max(sum(row), 1) for c, row in enumerate(cm)]


def train(model, loader, epochs=4):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    x = torch.randn(400, 12)
    y = (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()
    train_ds, val_ds = TensorDataset(x[:320], y[:320]), TensorDataset(x[320:], y[320:])
    model = MLP().to(device)
    train(model, DataLoader(train_ds, batch_size=32, shuffle=True))
    cm = confusion_matrix(model, DataLoader(val_ds, batch_size=40))
    print("recall per class:", [round(r, 3) for r in per_class_recall(cm)])
