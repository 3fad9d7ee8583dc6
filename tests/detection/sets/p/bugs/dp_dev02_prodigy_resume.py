# source: https://github.com/kozistr/pytorch_optimizer/issues/266
# area: device placement
# bug: the group-level d_numerator tensor restored from a CPU-mapped checkpoint stays on the CPU after resume
import math
import os
import tempfile

import torch
import torch.nn as nn


class LiteProdigy(torch.optim.Optimizer):
    def __init__(self, params, lr=1.0, betas=(0.9, 0.999), d0=1e-6, eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, d=d0, d0=d0, eps=eps, k=0))

    @torch.no_grad()
    def step(self, closure=None):
        group = self.param_groups[0]
        device = group["params"][0].device
        beta1, beta2 = group["betas"]
        beta3 = math.sqrt(beta2)
        d, d0, lr = group["d"], group["d0"], group["lr"]
        if "d_numerator" not in group:
            group["d_numerator"] = torch.zeros(1, device=device)
        d_numerator = group["d_numerator"]  # expect[r]: any
        d_numerator.mul_(beta3)
        d_denom = torch.zeros(1, device=device)
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            if not state:
                state["s"] = torch.zeros_like(p)
                state["p0"] = p.detach().clone()
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            g = p.grad
            d_numerator.add_(torch.dot(g.flatten(), (state["p0"] - p).flatten()), alpha=d / d0 * d * lr)
            state["exp_avg"].mul_(beta1).add_(g, alpha=d * (1 - beta1))
            state["exp_avg_sq"].mul_(beta2).addcmul_(g, g, value=d * d * (1 - beta2))
            state["s"].mul_(beta3).add_(g, alpha=d / d0 * d * lr)
            d_denom.add_(state["s"].abs().sum())
        d_hat = torch.where(d_denom > 0, d_numerator / d_denom.clamp_min(1e-12), torch.zeros_like(d_denom))
        group["d_hat"] = d_hat
        for p in group["params"]:
            if p.grad is None:
                continue
            state = self.state[p]
            denom = state["exp_avg_sq"].sqrt().add_(d * group["eps"])
            p.addcdiv_(state["exp_avg"], denom, value=-d * lr)
        group["k"] += 1


def make_model():
    return nn.Sequential(nn.Linear(12, 48), nn.GELU(), nn.Linear(48, 1))


def train_steps(model, opt, data, device, n):
    x_all, y_all = data
    running = torch.zeros((), device=device)
    for i in range(n):
        idx = torch.randint(0, len(x_all), (64,))
        x, y = x_all[idx].to(device), y_all[idx].to(device)
        loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    return running / n


def save_checkpoint(path, model, opt, epoch):
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch}, path)


def resume(path, device):
    model = make_model().to(device)
    opt = LiteProdigy(model.parameters())
    ckpt = torch.load(path, map_location="cpu")  # expect[r]: any
    model.load_state_dict(ckpt["model"])
    opt.load_state_dict(ckpt["optimizer"])
    return model, opt, ckpt["epoch"]


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(1024, 12)
    y = x[:, :3].sum(1) + 0.1 * torch.randn(1024)
    model = make_model().to(device)
    opt = LiteProdigy(model.parameters())
    print("first run:", train_steps(model, opt, (x, y), device, 20).item())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "last.ckpt")
        save_checkpoint(path, model, opt, epoch=1)
        model, opt, epoch = resume(path, device)
        print(f"resumed at epoch {epoch}:", train_steps(model, opt, (x, y), device, 20).item())
