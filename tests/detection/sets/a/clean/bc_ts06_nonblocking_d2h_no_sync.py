# twin of: bugs/bc_ts06_nonblocking_d2h_no_sync.py
# area: transfer & sync
# correct: the non_blocking GPU->CPU copies are all queued first and the stream is synchronized once before the host reads them
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Classifier(nn.Module):
    def __init__(self, d_in=20, n_cls=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.GELU(), nn.Linear(64, n_cls))

    def forward(self, x):
        return self.net(x)


def fit(model, loader, epochs=3):
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


@torch.no_grad()
def collect_predictions(model, loader):
    """Gather argmax predictions on the host without stalling the GPU per batch."""
    model.eval()
    preds = []
    for x, _ in loader:
        logits = model(x.to(device))
        preds.append(logits.argmax(dim=1).to("cpu", non_blocking=True))
    if device.type == "cuda":
        torch.cuda.current_stream().synchronize()
    return torch.cat(preds).numpy()


def macro_f1(pred, true, n_cls=3):
    f1s = []
    for c in range(n_cls):
        tp = np.sum((pred == c) & (true == c))
        fp = np.sum((pred == c) & (true != c))
        fn = np.sum((pred != c) & (true == c))
        f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
    return float(np.mean(f1s))


if __name__ == "__main__":
    x = torch.randn(300, 20)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    model = Classifier().to(device)
    fit(model, DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True))
    preds = collect_predictions(model, DataLoader(TensorDataset(x, y), batch_size=64))
    print("macro F1:", round(macro_f1(preds, y.numpy()), 4))
