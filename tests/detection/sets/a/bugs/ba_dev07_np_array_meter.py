# source: https://github.com/wengong-jin/hgraph2graph/issues/40
# area: device placement
# bug: the running meter builds a numpy array from accuracy tensors that live on the GPU; np.array calls Tensor.__array__, which cannot convert a CUDA tensor
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Encoder(nn.Module):
    def __init__(self, in_dim=20, n_classes=5):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(in_dim, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.cls = nn.Linear(64, n_classes)

    def forward(self, x):
        return self.cls(self.body(x))


def batch_accuracies(logits, y):
    top1 = (logits.argmax(1) == y).float().mean()
    top3 = (logits.topk(3, dim=1).indices == y[:, None]).any(1).float().mean()
    return top1, top3


def main():
    x = torch.randn(600, 20)
    y = (x[:, :5].argmax(1))
    loader = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True)
    model = Encoder().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    print_iter = 4
    for epoch in range(2):
        meters = np.zeros(3)
        for it, (xb, yb) in enumerate(loader):
            xb, yb = xb.to(device), yb.to(device)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            top1, top3 = batch_accuracies(logits.detach(), yb)
            meters = meters + np.array([loss.item(), top1 * 100, top3 * 100])  # expect: any
            if (it + 1) % print_iter == 0:
                meters /= print_iter
                print(f"[{epoch}:{it + 1}] loss={meters[0]:.3f} top1={meters[1]:.1f} top3={meters[2]:.1f}")
                meters *= 0


if __name__ == "__main__":
    main()
