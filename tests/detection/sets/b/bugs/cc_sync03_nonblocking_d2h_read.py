# source: https://github.com/pytorch/pytorch/issues/86264
# area: transfer & sync
# bug: predictions are copied GPU->CPU with non_blocking=True and read with .numpy() right away, before the async copy has finished, so the confusion matrix can use stale/garbage values
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NUM_CLASSES = 4


class MLP(nn.Module):
    def __init__(self, d_in=20, hidden=64, n_out=NUM_CLASSES):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, n_out))

    def forward(self, x):
        return self.net(x)


def gather_predictions(model, loader):
    """Run the model over the loader and return predictions and labels as numpy arrays."""
    model.eval()
    all_preds, all_labels = [], []
    with torch.no_grad():
        for x, y in loader:
            logits = model(x.to(device))
            preds = logits.argmax(dim=1).to("cpu", non_blocking=True)  # expect[d2h]: any
            all_preds.append(preds.numpy())  # expect[d2h]: any
            all_labels.append(y.numpy())
    return np.concatenate(all_preds), np.concatenate(all_labels)


def confusion_matrix(preds, labels, n=NUM_CLASSES):
    cm = np.zeros((n, n), dtype=np.int64)
    for p, t in zip(preds, labels):
        cm[t, p] += 1
    return cm


def main():
    x = torch.randn(400, 20)
    y = (x[:, :4].argmax(dim=1)).long()
    train_loader = DataLoader(TensorDataset(x[:300], y[:300]), batch_size=50, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[300:], y[300:]), batch_size=50)
    model = MLP().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(5):
        model.train()
        for xb, yb in train_loader:
            loss = nn.functional.cross_entropy(model(xb.to(device)), yb.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
    preds, labels = gather_predictions(model, val_loader)
    cm = confusion_matrix(preds, labels)
    print(cm)
    print("val acc", np.trace(cm) / cm.sum())


if __name__ == "__main__":
    main()
