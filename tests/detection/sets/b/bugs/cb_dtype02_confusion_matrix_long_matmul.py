# source: https://github.com/pytorch/pytorch/issues/44428
# area: dtype
# bug: the confusion matrix is built by multiplying int64 one-hot tensors; integer matmul works on the CPU but CUDA has no addmm kernel for Long ("addmm_cuda" not implemented for 'Long')
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NUM_CLASSES = 4


class MLP(nn.Module):
    def __init__(self, in_dim=16, hidden=32, n_classes=NUM_CLASSES):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.net(x)


def confusion_matrix(preds, targets, num_classes):
    # rows: true class, cols: predicted class
    t = F.one_hot(targets, num_classes)
    p = F.one_hot(preds, num_classes)
    return t.T @ p  # expect: any


def per_class_recall(cm):
    cm = cm.float()
    return cm.diag() / cm.sum(1).clamp(min=1)


def train_one_epoch(model, loader, opt):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    cm = torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.long, device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        preds = model(x).argmax(dim=1)
        cm += confusion_matrix(preds, y, NUM_CLASSES)
    return cm


if __name__ == "__main__":
    X = torch.randn(256, 16)
    y = (X[:, :4].argmax(dim=1))
    train_loader = DataLoader(TensorDataset(X[:192], y[:192]), batch_size=32, shuffle=True)
    val_loader = DataLoader(TensorDataset(X[192:], y[192:]), batch_size=32)
    model = MLP().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        train_one_epoch(model, train_loader, opt)
        cm = evaluate(model, val_loader)
        print(f"epoch {epoch}: recall per class {per_class_recall(cm).cpu().tolist()}")
