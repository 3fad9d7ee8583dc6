# source: https://github.com/meta-pytorch/botorch/pull/944
# area: dtype
# bug: the runtime setup turns on TF32 matmuls, so on Ampere+ GPUs the GP kernel matrix (built with a matmul) carries ~1e-3 relative error and the Cholesky-based posterior is wrong or fails
import math
from dataclasses import dataclass
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class BOConfig:
    dim: int = 4
    n_init: int = 12
    n_iters: int = 6
    n_candidates: int = 512
    lengthscale: float = 0.3
    outputscale: float = 1.0
    noise: float = 1e-4
    beta: float = 2.0
    fast_matmul: bool = True


def configure_runtime(cfg):
    torch.manual_seed(0)
    if cfg.fast_matmul:
        torch.backends.cuda.matmul.allow_tf32 = True  # expect: any
    torch.backends.cudnn.benchmark = True


def objective(x):
    centre = torch.full((x.shape[-1],), 0.35, device=x.device)
    return -((x - centre) ** 2).sum(-1) + 0.1 * torch.sin(12 * x).sum(-1)


class ExactGP:
    def __init__(self, cfg):
        self.cfg = cfg

    def kernel(self, a, b):
        a = a / self.cfg.lengthscale
        b = b / self.cfg.lengthscale
        sq = (a * a).sum(-1, keepdim=True) - 2 * a @ b.T + (b * b).sum(-1)
        return self.cfg.outputscale * torch.exp(-0.5 * sq.clamp_min(0))

    def fit(self, x, y):
        self.x = x
        self.mean = y.mean()
        k = self.kernel(x, x) + self.cfg.noise * torch.eye(len(x), device=x.device)
        self.chol = torch.linalg.cholesky(k)
        self.alpha = torch.cholesky_solve((y - self.mean).unsqueeze(-1), self.chol)

    def posterior(self, xq):
        kq = self.kernel(xq, self.x)
        mu = self.mean + (kq @ self.alpha).squeeze(-1)
        v = torch.linalg.solve_triangular(self.chol, kq.T, upper=False)
        var = (self.cfg.outputscale - (v * v).sum(0)).clamp_min(1e-9)
        return mu, var


def bayes_opt(cfg):
    x = torch.rand(cfg.n_init, cfg.dim, device=device)
    y = objective(x)
    gp = ExactGP(cfg)
    for _ in range(cfg.n_iters):
        gp.fit(x, y)
        cand = torch.rand(cfg.n_candidates, cfg.dim, device=device)
        mu, var = gp.posterior(cand)
        ucb = mu + math.sqrt(cfg.beta) * var.sqrt()
        best = cand[ucb.argmax()].unsqueeze(0)
        x = torch.cat([x, best])
        y = torch.cat([y, objective(best)])
    return x, y


if __name__ == "__main__":
    cfg = BOConfig()
    configure_runtime(cfg)
    xs, ys = bayes_opt(cfg)
    i = ys.argmax()
    print(f"best value {ys[i].item():.4f} at {[round(v, 3) for v in xs[i].tolist()]}")
