# source: https://github.com/LoganBooker/prodigy-plus-schedule-free/issues/19
# area: device placement
# bug: running d estimates kept as tensors inside param_groups are restored on the CPU by load_state_dict, so the first step after resume mixes them with CUDA params
import os
import tempfile

import torch
import torch.nn as nn
from torch.optim import Optimizer

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ProdigyLite(Optimizer):
    def __init__(self, params, lr=1.0, betas=(0.9, 0.99), beta3=0.99, d0=1e-6, eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, beta3=beta3, d0=d0, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            dev = group["params"][0].device
            if "running_d_numerator" not in group:
                group["running_d_numerator"] = torch.zeros(1, device=dev)
                group["running_d_denom"] = torch.zeros(1, device=dev)
                group["d"] = torch.full((1,), group["d0"], device=dev)
            d_num = group["running_d_numerator"]  # expect[g]: any
            d_den = group["running_d_denom"]
            d = group["d"]
            beta1, beta2 = group["betas"]
            lr = group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["p0"] = p.detach().clone()
                    st["s"] = torch.zeros_like(p)
                    st["exp_avg"] = torch.zeros_like(p)
                    st["exp_avg_sq"] = torch.zeros_like(p)
                g = p.grad
                d_num.mul_(group["beta3"]).add_(d * d * lr * torch.dot(g.flatten(), (st["p0"] - p).flatten()))  # expect[g]: any
                st["s"].mul_(group["beta3"]).add_(g * d * d * lr)
                d_den.mul_(group["beta3"]).add_(st["s"].abs().sum())
                st["exp_avg"].mul_(beta1).add_(g * d, alpha=1 - beta1)
                st["exp_avg_sq"].mul_(beta2).addcmul_(g, g * d * d, value=1 - beta2)
                denom = st["exp_avg_sq"].sqrt().add_(d * group["eps"])
                p.sub_(lr * d * st["exp_avg"] / denom)
            d_hat = d_num / d_den.clamp_min(1e-12)
            torch.maximum(d, d_hat, out=d)


def build(cfg_dim=16):
    return nn.Sequential(nn.Linear(cfg_dim, 32), nn.Tanh(), nn.Linear(32, 1))


def train_steps(model, opt, n_steps, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(256, 16, generator=g).to(device)
    y = x[:, :4].sum(dim=1, keepdim=True)
    losses = []
    for _ in range(n_steps):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def main():
    torch.manual_seed(0)
    ckpt_dir = tempfile.mkdtemp()
    path = os.path.join(ckpt_dir, "last.ckpt")

    model = build().to(device)
    opt = ProdigyLite(model.parameters())
    first = train_steps(model, opt, 20, seed=1)
    torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, path)

    ckpt = torch.load(path, map_location="cpu")
    resumed = build()
    resumed.load_state_dict(ckpt["model"])
    resumed.to(device)
    opt2 = ProdigyLite(resumed.parameters())
    opt2.load_state_dict(ckpt["optim"])  # expect[g]: any
    second = train_steps(resumed, opt2, 20, seed=1)
    print(f"loss before resume {first[-1].item():.4f}, after {second[-1].item():.4f}")


if __name__ == "__main__":
    main()
