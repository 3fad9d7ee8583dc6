# source: https://github.com/facebookresearch/madgrad/issues/4
# area: device placement
# bug: custom optimizer allocates its momentum state in __init__ while the params are still on the CPU; the model is moved to the GPU afterwards, so the state stays on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class HeavyBallSGD(torch.optim.Optimizer):
    """SGD with heavy-ball momentum; state is pre-allocated for speed."""

    def __init__(self, params, lr=0.01, momentum=0.9, weight_decay=0.0):
        defaults = dict(lr=lr, momentum=momentum, weight_decay=weight_decay)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["momentum_buffer"] = torch.zeros_like(p)  # expect[state]: any
                state["step"] = 0

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["weight_decay"] != 0:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(grad)
                p.add_(buf, alpha=-group["lr"])
                state["step"] += 1
        return loss


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    x = torch.randn(512, 8)
    y = x[:, 0] * 2.0 - x[:, 3] + 0.1 * torch.randn(512)
    model = Regressor()
    optimizer = HeavyBallSGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    model.to(device)  # expect[state]: any
    for epoch in range(5):
        perm = torch.randperm(x.size(0))
        for i in range(0, x.size(0), 64):
            idx = perm[i:i + 64]
            xb, yb = x[idx].to(device), y[idx].to(device)
            optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
