# source: https://github.com/JieyuZ2/wrench/issues/4
# area: device placement
# bug: the labels of the clean meta batch come straight from the CPU loader and meet GPU logits in cross_entropy
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
from torch.utils.data import DataLoader, Dataset


class NoisyTextFeatures(Dataset):
    def __init__(self, n, dim, n_class, noise=0.3, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, dim, generator=g)
        clean = (self.x[:, :n_class]).argmax(1)
        flip = torch.rand(n, generator=g) < noise
        self.labels = torch.where(flip, torch.randint(0, n_class, (n,), generator=g), clean)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"features": self.x[i], "labels": self.labels[i], "ids": i}


class VNet(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, cost):
        return torch.sigmoid(self.net(cost))


def cross_entropy_with_probs(logits, target, reduction="mean"):
    if target.dim() == 1:
        return F.cross_entropy(logits, target.long(), reduction=reduction)
    return -(target * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def endless(loader):
    while True:
        for b in loader:
            yield b


def fit(model, vnet, train_set, meta_set, device, steps=30, inner_lr=0.1):
    y_train = train_set.labels.to(device)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True, drop_last=True)
    meta_iter = endless(DataLoader(meta_set, batch_size=32, shuffle=True, drop_last=True))
    opt = torch.optim.SGD(model.parameters(), lr=inner_lr)
    opt_v = torch.optim.Adam(vnet.parameters(), lr=1e-3)
    total = torch.zeros((), device=device)
    step = 0
    for batch in endless(train_loader):
        x = batch["features"].to(device)
        target = y_train[batch["ids"].to(device)]

        params = dict(model.named_parameters())
        cost = cross_entropy_with_probs(functional_call(model, params, (x,)), target, "none")
        w = vnet(cost.unsqueeze(1)).squeeze(1)
        grads = torch.autograd.grad((cost * w).mean(), list(params.values()), create_graph=True)
        fast = {k: p - inner_lr * g for (k, p), g in zip(params.items(), grads)}

        meta_batch = next(meta_iter)
        meta_x = meta_batch["features"].to(device)
        meta_target = meta_batch["labels"]  # expect: any
        meta_loss = cross_entropy_with_probs(functional_call(model, fast, (meta_x,)), meta_target)
        opt_v.zero_grad()
        meta_loss.backward()
        opt_v.step()

        cost = cross_entropy_with_probs(model(x), target, "none")
        with torch.no_grad():
            w_new = vnet(cost.detach().unsqueeze(1)).squeeze(1)
        loss = (cost * w_new).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.detach()
        step += 1
        if step >= steps:
            break
    return total / steps


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    train_set = NoisyTextFeatures(512, 16, 4, noise=0.4, seed=1)
    meta_set = NoisyTextFeatures(128, 16, 4, noise=0.0, seed=2)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    vnet = VNet().to(device)
    avg = fit(model, vnet, train_set, meta_set, device)
    print(f"mean weighted loss: {avg.item():.4f}")
