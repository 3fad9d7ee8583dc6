# source: https://github.com/facebookresearch/optimizers/issues/3
# area: device placement
# bug: on resume the checkpoint is mapped to the CPU; Optimizer.load_state_dict only casts bare tensors, so the Preconditioner objects in the state keep CPU statistics while the grads are on cuda
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class Preconditioner:
    """Left Kronecker factor of a 2-D gradient, with a cached inverse 4th root."""

    def __init__(self, dim, eps, device):
        self.stat = eps * torch.eye(dim, device=device)
        self.root_inv = torch.eye(dim, device=device)

    def accumulate(self, grad):
        self.stat.add_(grad @ grad.T)

    def refresh(self):
        evals, evecs = torch.linalg.eigh(self.stat)
        self.root_inv = evecs @ torch.diag(evals.clamp(min=1e-12) ** -0.25) @ evecs.T

    def apply(self, grad):
        return self.root_inv @ grad


class LeftShampoo(torch.optim.Optimizer):
    def __init__(self, params, lr=0.05, eps=1e-4, refresh_every=5):
        super().__init__(params, dict(lr=lr, eps=eps, refresh_every=refresh_every))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["precond"] = Preconditioner(p.shape[0], group["eps"], p.device) if p.dim() == 2 else None
                    state["sum_sq"] = torch.zeros_like(p)
                state["step"] += 1
                g = p.grad
                pc = state["precond"]
                if pc is None:
                    state["sum_sq"].addcmul_(g, g)
                    p.add_(g / (state["sum_sq"].sqrt() + group["eps"]), alpha=-group["lr"])
                    continue
                pc.accumulate(g)
                if state["step"] % group["refresh_every"] == 1:
                    pc.refresh()
                p.add_(pc.apply(g), alpha=-group["lr"])


def run(model, opt, x, y, steps):
    for _ in range(steps):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(256, 16, device=device)
    y = torch.sin(x[:, :4]).sum(1, keepdim=True)

    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
    opt = LeftShampoo(model.parameters())
    print("phase 1 loss", run(model, opt, x, y, 12).item())

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "last.ckpt")
        torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, path)

        resumed = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
        ckpt = torch.load(path, map_location="cpu", weights_only=False)  # expect[w]: any
        resumed.load_state_dict(ckpt["model"])
        opt2 = LeftShampoo(resumed.parameters())
        opt2.load_state_dict(ckpt["optim"])  # expect[w]: any
        print("phase 2 loss", run(resumed, opt2, x, y, 12).item())


if __name__ == "__main__":
    main()
