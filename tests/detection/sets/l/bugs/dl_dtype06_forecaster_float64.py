# source: https://github.com/unit8co/darts/issues/2326
# area: dtype
# bug: the NumPy series stays float64 and the model is cast to .double() to match it; on an Apple GPU (mps) float64 tensors cannot exist at all, and on CUDA the whole model runs at float64 speed
import numpy as np
import torch
import torch.nn as nn


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def make_series(n=400, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    seasonal = np.sin(2 * np.pi * t / 24) + 0.5 * np.sin(2 * np.pi * t / 168)
    trend = 0.002 * t
    return seasonal + trend + 0.1 * rng.standard_normal(n)


class WindowedSeries:
    def __init__(self, values, input_len=48, horizon=12):
        self.mean = values.mean()
        self.std = values.std()
        scaled = (values - self.mean) / self.std
        starts = np.arange(0, len(scaled) - input_len - horizon)
        self.x = np.stack([scaled[s:s + input_len] for s in starts])[..., None]
        self.y = np.stack([scaled[s + input_len:s + input_len + horizon] for s in starts])

    def tensors(self, device):
        x = torch.from_numpy(self.x).to(device)  # expect[w]: any
        y = torch.from_numpy(self.y).to(device)
        return x, y


class GRUForecaster(nn.Module):
    def __init__(self, hidden=32, horizon=12):
        super().__init__()
        self.rnn = nn.GRU(1, hidden, batch_first=True)
        self.head = nn.Linear(hidden, horizon)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def fit(model, x, y, epochs=3, batch_size=64, lr=3e-3):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    n = x.shape[0]
    for epoch in range(epochs):
        perm = torch.randperm(n, device=x.device)
        total = torch.zeros((), dtype=x.dtype, device=x.device)
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            loss = nn.functional.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach() * idx.numel()
        print(f"epoch {epoch}: mse {(total / n).item():.4f}")


def main():
    torch.manual_seed(0)
    device = pick_device()
    data = WindowedSeries(make_series())
    x, y = data.tensors(device)
    model = GRUForecaster().double().to(device)  # expect[w]: any
    fit(model, x, y)
    with torch.no_grad():
        forecast = model(x[-1:]).cpu().numpy()[0] * data.std + data.mean
    print("next 12 steps:", np.round(forecast, 3))


if __name__ == "__main__":
    main()
