# source: https://github.com/f-dangel/sirfshampoo/issues/34
# area: device placement
# bug: the checkpoint is loaded with map_location="cpu" and the optimizer keeps its preconditioner tensors inside custom state objects that load_state_dict does not cast back, so they stay on the CPU after resuming on the GPU
import os
import tempfile

import torch
import torch.nn as nn


class DiagonalPreconditioner:
    """Running second-moment estimate kept per parameter."""

    def __init__(self, param, beta=0.99, eps=1e-8):
        self.beta, self.eps = beta, eps
        self.second_moment = torch.zeros_like(param)
        self.steps = 0

    def update(self, grad):
        self.steps += 1
        self.second_moment.mul_(self.beta).addcmul_(grad, grad, value=1 - self.beta)

    def precondition(self, grad):
        corrected = self.second_moment / (1 - self.beta ** self.steps)
        return grad / (corrected.sqrt() + self.eps)


class PreconditionedSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-2, beta=0.99):
        super().__init__(params, dict(lr=lr, beta=beta))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "precond" not in state:
                    state["precond"] = DiagonalPreconditioner(p, beta=group["beta"])
                precond = state["precond"]
                precond.update(p.grad)
                p.add_(precond.precondition(p.grad), alpha=-group["lr"])


def make_model():
    return nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))


def train_steps(model, optimizer, device, n_steps, seed):
    g = torch.Generator().manual_seed(seed)
    w_true = torch.linspace(-1, 1, 16)
    for _ in range(n_steps):
        x = torch.randn(64, 16, generator=g)
        y = (x @ w_true).unsqueeze(-1) + 0.1 * torch.randn(64, 1, generator=g)
        x, y = x.to(device), y.to(device)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_path = os.path.join(tmp, "last.pt")

        model = make_model().to(device)
        optimizer = PreconditionedSGD(model.parameters(), lr=5e-3)
        loss = train_steps(model, optimizer, device, 25, seed=0)
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 25}, ckpt_path)
        print(f"before resume: loss={loss.item():.4f}")

        resumed = make_model().to(device)
        resumed_opt = PreconditionedSGD(resumed.parameters(), lr=5e-3)
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)  # expect[ckpt]: any
        resumed.load_state_dict(ckpt["model"])
        resumed_opt.load_state_dict(ckpt["optimizer"])  # expect[ckpt]: any
        loss = train_steps(resumed, resumed_opt, device, 25, seed=1)
        print(f"after resume from step {ckpt['step']}: loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
