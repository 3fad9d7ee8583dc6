# source: https://github.com/pytorch/ignite/issues/1082
# area: transfer & sync
# bug: the metric's update() turns the batch error into a Python float with .item(), forcing a device->host sync on every evaluation batch
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Metric:
    def __init__(self, device):
        self._device = torch.device(device)
        self.reset()

    def reset(self):
        raise NotImplementedError

    def update(self, output):
        raise NotImplementedError

    def compute(self):
        raise NotImplementedError


class MeanSquaredError(Metric):
    def reset(self):
        self._sum_of_squared_errors = 0.0
        self._num_examples = 0

    def update(self, output):
        y_pred, y = output[0].detach(), output[1].detach()
        squared_errors = torch.pow(y_pred - y.view_as(y_pred), 2)
        self._sum_of_squared_errors += torch.sum(squared_errors).item()  # expect: any
        self._num_examples += y.shape[0]

    def compute(self):
        if self._num_examples == 0:
            raise RuntimeError("MeanSquaredError needs at least one example")
        return self._sum_of_squared_errors / self._num_examples


class Evaluator:
    def __init__(self, model, metrics, device):
        self.model = model
        self.metrics = metrics
        self.device = device

    @torch.no_grad()
    def run(self, loader):
        self.model.eval()
        for m in self.metrics.values():
            m.reset()
        for x, y in loader:
            x, y = x.to(self.device), y.to(self.device)
            y_pred = self.model(x)
            for m in self.metrics.values():
                m.update((y_pred, y))
        return {name: m.compute() for name, m in self.metrics.items()}


def make_regression_data(n=768, d=13, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return x, y


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x, y = make_regression_data()
    train_loader = DataLoader(TensorDataset(x[:512], y[:512]), batch_size=64, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[512:], y[512:]), batch_size=64)

    model = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.MSELoss()
    evaluator = Evaluator(model, {"mse": MeanSquaredError(device)}, device)

    for epoch in range(2):
        model.train()
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
        results = evaluator.run(val_loader)
        print(f"epoch {epoch}: val mse {results['mse']:.4f}")


if __name__ == "__main__":
    main()
