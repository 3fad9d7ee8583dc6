# source: https://github.com/pytorch/pytorch/issues/15005
# area: device placement
# bug: the per-task heads live in a plain Python list, so model.to(device) never moves them (and the optimizer never sees them)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

NUM_CLASSES = [5, 2, 10, 3]
IN_FEATURES = 32


class MultiTaskNet(nn.Module):
    def __init__(self, in_features, num_classes):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_features, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.heads = []  # expect[heads]: any
        for c in num_classes:
            self.heads.append(nn.Linear(64, c))

    def forward(self, x):
        feat = self.trunk(x)
        return [head(feat) for head in self.heads]  # expect[heads]: any


def make_data(n):
    x = torch.randn(n, IN_FEATURES)
    ys = [torch.randint(0, c, (n,)) for c in NUM_CLASSES]
    return x, ys


def evaluate(model, x, ys):
    model.eval()
    with torch.no_grad():
        outs = model(x.to(device))
        accs = [(o.argmax(1) == y.to(device)).float().mean().item() for o, y in zip(outs, ys)]
    model.train()
    return accs


def main():
    x_train, y_train = make_data(256)
    x_test, y_test = make_data(64)
    model = MultiTaskNet(IN_FEATURES, NUM_CLASSES).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        perm = torch.randperm(x_train.size(0))
        for i in range(0, x_train.size(0), 32):
            idx = perm[i:i + 32]
            xb = x_train[idx].to(device)
            outs = model(xb)
            loss = sum(F.cross_entropy(o, y[idx].to(device)) for o, y in zip(outs, y_train))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} accs {evaluate(model, x_test, y_test)}")


if __name__ == "__main__":
    main()
