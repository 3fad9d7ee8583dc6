# source: https://github.com/Koratahiu/Advanced_Optimizers/pull/5
# area: transfer & sync
# bug: the per-parameter projection coefficient is a 0-dim device tensor passed as alpha= to Tensor.sub, which converts it to a Python scalar and syncs the GPU once per parameter every optimizer step
import torch
import torch.nn as nn


def orthogonalize_gradient(p, grad):
    """Remove from grad its component along the weight vector p."""
    w = p.detach().view(-1).float()
    g = grad.view(-1).float()
    w_norm_sq = torch.dot(w, w).add_(1e-30)
    proj = torch.dot(w, g) / w_norm_sq
    g_orth = g.sub(w, alpha=proj)  # expect: any
    g_norm = g.norm(2)
    g_orth_norm = g_orth.norm(2).add_(1e-30)
    g_orth = g_orth * (g_norm / g_orth_norm)
    return g_orth.view_as(grad).to(grad.dtype)


class OrthoAdamW(torch.optim.Optimizer):
    """AdamW whose gradients are first made orthogonal to the weights (OrthoGrad)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.01, orthogonal=True):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        orthogonal=orthogonal)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["orthogonal"] and p.dim() > 1:
                    grad = orthogonalize_gradient(p, grad)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias1 = 1 - beta1 ** t
                bias2 = 1 - beta2 ** t
                denom = (exp_avg_sq / bias2).sqrt_().add_(group["eps"])
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.addcdiv_(exp_avg, denom, value=-group["lr"] / bias1)
        return loss


class TinyClassifier(nn.Module):
    def __init__(self, d_in=48, hidden=96, classes=5, depth=4):
        super().__init__()
        layers = [nn.Linear(d_in, hidden), nn.GELU()]
        for _ in range(depth - 1):
            layers += [nn.Linear(hidden, hidden), nn.GELU()]
        layers.append(nn.Linear(hidden, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyClassifier().to(device)
    opt = OrthoAdamW(model.parameters(), lr=3e-3)
    x = torch.randn(512, 48, device=device)
    y = x[:, :5].argmax(dim=1)
    loss_fn = nn.CrossEntropyLoss()
    history = []
    for step in range(40):
        idx = torch.randint(0, x.shape[0], (64,), device=device)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        history.append(loss.detach())
    print("final loss", torch.stack(history[-10:]).mean().item())


if __name__ == "__main__":
    main()
