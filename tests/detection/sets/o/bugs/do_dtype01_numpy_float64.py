# source: https://github.com/pytorch/pytorch/issues/79019
# area: dtype
# bug: float64 NumPy data is moved to the accelerator before .float(), doubling the copy and failing outright on MPS which has no float64
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn


def pick_device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def write_example_file(path, n_rows=720, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(1.0, 5.0, size=(n_rows, 3))
    y = x[:, 0] * x[:, 1] / x[:, 2]
    np.savetxt(path, np.column_stack([x, y]))


def as_device_tensor(array, device):
    tensor = torch.from_numpy(array).to(device)  # expect: any
    return tensor.float()


class FeynmanNet(nn.Module):
    def __init__(self, n_variables, width=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_variables, width), nn.Tanh(),
            nn.Linear(width, width), nn.Tanh(),
            nn.Linear(width, width), nn.Tanh(),
            nn.Linear(width, 1),
        )

    def forward(self, x):
        return self.body(x)


def load_split(path, n_variables, device):
    variables = np.loadtxt(path, usecols=tuple(range(n_variables)))
    f_dependent = np.loadtxt(path, usecols=(n_variables,)).reshape(-1, 1)
    cut = int(5 * len(variables) / 6)
    train = (as_device_tensor(variables[:cut], device), as_device_tensor(f_dependent[:cut], device))
    valid = (as_device_tensor(variables[cut:], device), as_device_tensor(f_dependent[cut:], device))
    return train, valid


def fit(model, train, valid, epochs=20, batch_size=64, lr=3e-3):
    factors, product = train
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.MSELoss()
    n = factors.shape[0]
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(n, device=factors.device)
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(factors[idx]), product[idx])
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        rmse = torch.sqrt(loss_fn(model(valid[0]), valid[1]))
    return rmse.item()


def main():
    device = pick_device()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "example1.txt")
        write_example_file(path)
        train, valid = load_split(path, n_variables=3, device=device)
    model = FeynmanNet(n_variables=3).to(device)
    rmse = fit(model, train, valid)
    print(f"validation rmse: {rmse:.4f}")


if __name__ == "__main__":
    main()
