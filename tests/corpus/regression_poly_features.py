"""Fit a polynomial with a linear layer on features x, x^2, x^3, x^4.

The target's weights are module-level tensors; `get_batch` returns (x, y) pairs built by
the `make_features` and `f` helpers instead of a DataLoader.
"""

import torch
import torch.nn.functional as F

POLY_DEGREE = 4
torch.manual_seed(0)
W_target = torch.randn(POLY_DEGREE, 1) * 0.5
b_target = torch.randn(1) * 0.5


def make_features(x):
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)


def f(x):
    return x.mm(W_target) + b_target.item()


def poly_desc(W, b):
    result = "y = "
    for i, w in enumerate(W):
        result += f"{w:+.2f} x^{i + 1} "
    result += f"{b[0]:+.2f}"
    return result


def get_batch(batch_size=32):
    random = torch.rand(batch_size) * 2 - 1
    x = make_features(random)
    y = f(x)
    return x, y


fc = torch.nn.Linear(W_target.size(0), 1)
for batch_idx in range(1, 201):
    batch_x, batch_y = get_batch()
    fc.zero_grad()
    output = F.smooth_l1_loss(fc(batch_x), batch_y)
    loss = output.item()
    output.backward()
    for param in fc.parameters():
        param.data.add_(-0.1 * param.grad)

print(f"Loss: {loss:.6f} after {batch_idx} batches")
print("==> Learned function:\t" + poly_desc(fc.weight.view(-1), fc.bias))
print("==> Actual function:\t" + poly_desc(W_target.view(-1), b_target))
with torch.no_grad():
    grid = make_features(torch.linspace(-1, 1, 50))
    final = F.mse_loss(fc(grid), f(grid))
print(f"final loss {final.item():.8f}")
