# source: https://cnblogs.com/js2hou/p/15874535.html
# area: device placement
# bug: the per-task heads live in a plain dict instead of nn.ModuleDict, so model.to(device) does not move them (their params were only patched into the optimizer by hand)
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

TASKS = {"age_bucket": 4, "gender": 2, "smile": 2}


class MultiTaskNet(nn.Module):
    def __init__(self, in_dim, tasks, hidden=48):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.heads = {name: nn.Linear(hidden, n_out) for name, n_out in tasks.items()}  # expect: any

    def forward(self, x):
        h = self.trunk(x)
        return {name: head(h) for name, head in self.heads.items()}

    def all_parameters(self):
        params = list(self.parameters())
        for head in self.heads.values():
            params += list(head.parameters())
        return params


def make_data(n=300, in_dim=16):
    x = torch.randn(n, in_dim)
    ys = [x[:, :4].argmax(1), (x[:, 4] > 0).long(), (x[:, 5] + x[:, 6] > 0).long()]
    return TensorDataset(x, *ys)


def main():
    loader = DataLoader(make_data(), batch_size=30, shuffle=True)
    model = MultiTaskNet(16, TASKS).to(device)
    optimizer = torch.optim.Adam(model.all_parameters(), lr=3e-3)
    for epoch in range(3):
        running = {k: 0.0 for k in TASKS}
        for x, *ys in loader:
            x = x.to(device)
            targets = {k: y.to(device) for k, y in zip(TASKS, ys)}
            outs = model(x)
            losses = {k: F.cross_entropy(outs[k], targets[k]) for k in TASKS}
            loss = sum(losses.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            for k in TASKS:
                running[k] += losses[k].item() / len(loader)
        print(f"epoch {epoch} " + " ".join(f"{k}={v:.3f}" for k, v in running.items()))


if __name__ == "__main__":
    main()
