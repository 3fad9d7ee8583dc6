import torch
from torch import nn
from torch.utils.data import DataLoader


def train(model, dataset, optimizer, device):
    loader = DataLoader(dataset)
    model.to(device)
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        print(loss)
        if loss:
            break
        value = float(loss)
        if loss < 0.01:
            break
        assert not torch.isnan(loss).any()
        message = f"loss {loss:.4f}"
        while loss > 100:
            loss = loss / 2


class Trainer:
    def __init__(self, model, optimizer, device):
        self.model, self.optimizer, self.device = model.to(device), optimizer, device

    def check_gradients(self):
        for p in self.model.parameters():
            if not torch.isfinite(p.grad).all():
                raise FloatingPointError("non-finite gradient")

    def update(self, x):
        loss = self.model(x).sum()
        loss.backward()
        self.check_gradients()
        self.optimizer.step()

    def fit(self, data, steps):
        for _ in range(steps):  # the training loop: update() makes one step
            self.update(data.to(self.device))


class CenterLoss(torch.nn.Module):
    def forward(self, feats, labels):
        classes = torch.unique(labels)  # its size comes from the device's values
        return feats[labels].sum() / len(classes)


def train_center(model, loader, optimizer):
    criterion = CenterLoss()
    for x, y in loader:
        loss = criterion(model(x.to("cuda")), y.to("cuda"))
        loss.backward()
        optimizer.step()


def chunked(model, loader, device, chunk=4):
    for x, y in loader:
        x = x.to(device)
        n = (x.sum(-1) > 0).sum()
        for start in range(0, n, chunk):
            model(x[start:start + chunk]).sum().backward()


class TypedFilters(nn.Module):
    def __init__(self):
        super().__init__()
        self.filters = nn.ModuleList(nn.Linear(1, 4) for _ in range(3))

    def forward(self, s, types):
        out = s.new_zeros(*s.shape[:-1], 4)
        for t, filt in enumerate(self.filters):
            sel = types == t
            out[sel] = filt(s[sel])  # a sync per type, every step
        return out


def train_typed(steps):
    device = torch.device("cuda")
    model = TypedFilters().to(device)
    for _ in range(steps):
        s = torch.randn(8, 5, 1, device=device)
        types = torch.randint(0, 3, (8, 5), device=device)
        model(s, types).sum().backward()
