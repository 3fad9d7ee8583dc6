# source: https://github.com/davidtvs/pytorch-lr-finder/pull/31
# area: transfer & sync
# bug: the LR finder copies batches with non_blocking=True but the DataLoader does not pin memory, so every copy is still a synchronous pageable transfer
import copy
import math
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class NoisyRegression(Dataset):
    def __init__(self, n=2048, dim=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, dim, generator=g)
        w = torch.randn(dim, 1, generator=g)
        self.y = self.x @ w + 0.1 * torch.randn(n, 1, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class LRFinder:
    def __init__(self, model, optimizer, criterion, device):
        self.model = model.to(device)
        self.optimizer = optimizer
        self.criterion = criterion
        self.device = device
        self._state = copy.deepcopy(model.state_dict())
        self.history = {"lr": [], "loss": []}

    def _move(self, batch):
        inputs, labels = batch
        return (inputs.to(self.device, non_blocking=True),  # expect[pin]: any
                labels.to(self.device, non_blocking=True))

    def range_test(self, loader, start_lr=1e-5, end_lr=1.0, num_iter=60, smooth=0.05):
        gamma = (end_lr / start_lr) ** (1.0 / num_iter)
        for group in self.optimizer.param_groups:
            group["lr"] = start_lr
        losses = []
        it = iter(loader)
        for step in range(num_iter):
            try:
                batch = next(it)
            except StopIteration:
                it = iter(loader)
                batch = next(it)
            inputs, labels = self._move(batch)
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.criterion(self.model(inputs), labels)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach())
            self.history["lr"].append(self.optimizer.param_groups[0]["lr"])
            for group in self.optimizer.param_groups:
                group["lr"] *= gamma
        raw = torch.stack(losses).cpu().tolist()
        avg = raw[0]
        for v in raw:
            avg = smooth * v + (1 - smooth) * avg
            self.history["loss"].append(avg)
        self.model.load_state_dict(self._state)

    def suggestion(self):
        losses = self.history["loss"]
        finite = [i for i, l in enumerate(losses) if math.isfinite(l)]
        best = min(finite, key=lambda i: losses[i])
        return self.history["lr"][best]


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(NoisyRegression(), batch_size=64, shuffle=True, num_workers=0,
                        pin_memory=False)  # expect[pin]: any
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-5, momentum=0.9)
    finder = LRFinder(model, opt, nn.MSELoss(), device)
    finder.range_test(loader)
    print(f"suggested lr: {finder.suggestion():.2e}")


if __name__ == "__main__":
    main()
