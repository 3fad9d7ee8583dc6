# source: https://github.com/pytorch/pytorch/issues/38487
# area: AMP
# bug: a hand-written autograd.Function (fused linear + GELU) has no torch.amp.custom_fwd/custom_bwd, so under fp16 autocast its backward runs outside autocast and multiplies the fp16 grad_output with the fp32 weight ("expected m1 and m2 to have the same dtype") on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"


class FusedLinearGELU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):  # expect[fn]: any
        pre = x.matmul(weight.t()) + bias
        ctx.save_for_backward(x, weight, pre)
        return F.gelu(pre)

    @staticmethod
    def backward(ctx, grad_out):
        x, weight, pre = ctx.saved_tensors
        cdf = 0.5 * (1.0 + torch.erf(pre / 1.4142135623730951))
        pdf = torch.exp(-0.5 * pre * pre) * 0.3989422804014327
        grad_pre = grad_out * (cdf + pre * pdf)
        grad_x = grad_pre.matmul(weight)  # expect[fn]: any
        grad_w = grad_pre.flatten(0, -2).t().matmul(x.flatten(0, -2))
        grad_b = grad_pre.flatten(0, -2).sum(0)
        return grad_x, grad_w, grad_b


class FusedMLPBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(hidden, dim) * dim ** -0.5)
        self.b1 = nn.Parameter(torch.zeros(hidden))
        self.fc2 = nn.Linear(hidden, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return x + self.fc2(FusedLinearGELU.apply(self.norm(x), self.w1, self.b1))


class Net(nn.Module):
    def __init__(self, in_dim=12, dim=32, n_classes=3):
        super().__init__()
        self.inp = nn.Linear(in_dim, dim)
        self.blocks = nn.Sequential(FusedMLPBlock(dim, 64), FusedMLPBlock(dim, 64))
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x):
        return self.head(self.blocks(self.inp(x)))


if __name__ == "__main__":
    X = torch.randn(192, 12)
    y = (X[:, 0] + X[:, 1] > 0).long() + (X[:, 2] > 1).long()
    loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
    model = Net().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for epoch in range(3):
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.4f}")
