# source: https://github.com/NVIDIA-NeMo/Emerging-Optimizers/pull/255
# area: transfer & sync
# bug: the f-string in logger.debug formats a CUDA tensor for every parameter on every step even when DEBUG is off, each one a blocking device-to-host copy
import logging

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
logger = logging.getLogger("precond_optim")


class DiagPrecondAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.99), eps=1e-8, eigval_exp=-0.5):
        defaults = dict(lr=lr, betas=betas, eps=eps, eigval_exp=eigval_exp)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for idx, p in enumerate(group["params"]):
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                m, v, g = state["m"], state["v"], p.grad
                m.mul_(beta1).add_(g, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
                bias2 = 1 - beta2 ** state["step"]
                scale_factor = (v / bias2).clamp_min(group["eps"]) ** group["eigval_exp"]
                logger.debug(f"scale_factor[{idx}]: {scale_factor}")  # expect: any
                p.add_(m * scale_factor, alpha=-group["lr"])
        return loss


class Regressor(nn.Module):
    def __init__(self, d_in=32, d_hidden=32):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, d_hidden), nn.GELU(),
                                  nn.Linear(d_hidden, d_hidden), nn.GELU(),
                                  nn.Linear(d_hidden, 1))

    def forward(self, x):
        return self.body(x).squeeze(-1)


def make_batch(batch_size, d_in, w_true):
    x = torch.randn(batch_size, d_in, device=device)
    y = torch.sin(x @ w_true) + 0.05 * torch.randn(batch_size, device=device)
    return x, y


def train(steps=15, d_in=32):
    torch.manual_seed(0)
    model = Regressor(d_in).to(device)
    opt = DiagPrecondAdam(model.parameters(), lr=3e-3)
    w_true = torch.randn(d_in, device=device) / d_in ** 0.5
    running = torch.zeros((), device=device)
    for step in range(steps):
        x, y = make_batch(128, d_in, w_true)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    return (running / steps).item()


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    print(f"mean train loss {train():.4f}")
