# source: https://github.com/lucidrains/ema-pytorch/pull/31
# area: device placement
# bug: the EMA wrapper's step counter buffer is created on the CPU and the wrapper is never moved, so the decay derived from it is a CPU tensor passed to lerp_ on CUDA parameters
import copy
import torch
import torch.nn as nn
import torch.nn.functional as F


class PowerFunctionEMA(nn.Module):
    """Karras-style EMA whose decay grows with the number of updates."""

    def __init__(self, model, gamma=6.94, update_after_step=5, update_every=1):
        super().__init__()
        self._online = [model]
        self.ema_model = copy.deepcopy(model).eval().requires_grad_(False)
        self.gamma = gamma
        self.update_after_step = update_after_step
        self.update_every = update_every
        self.num_updates = 0
        self.register_buffer("step", torch.tensor([0]))  # expect[ema]: any

    @property
    def online_model(self):
        return self._online[0]

    @property
    def beta(self):
        return (1.0 - 1.0 / (self.step + 1)) ** (1.0 + self.gamma)

    @torch.no_grad()
    def copy_params_from_online(self):
        for ema_p, p in zip(self.ema_model.parameters(), self.online_model.parameters()):
            ema_p.copy_(p)

    @torch.no_grad()
    def update(self):
        step = self.num_updates
        self.num_updates += 1
        self.step += 1
        if step % self.update_every:
            return
        if step <= self.update_after_step:
            self.copy_params_from_online()
            return
        current_decay = self.beta
        for ema_p, p in zip(self.ema_model.parameters(), self.online_model.parameters()):
            ema_p.lerp_(p, 1.0 - current_decay)  # expect[ema]: any
        for ema_b, b in zip(self.ema_model.buffers(), self.online_model.buffers()):
            ema_b.copy_(b)

    def forward(self, *args, **kwargs):
        return self.ema_model(*args, **kwargs)


class Denoiser(nn.Module):
    def __init__(self, dim=32, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, dim))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None]], dim=-1))


def train(model, ema, data, steps, batch_size=64, lr=2e-3):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    for _ in range(steps):
        idx = torch.randint(0, data.shape[0], (batch_size,), device=data.device)
        x0 = data[idx]
        t = torch.rand(batch_size, device=data.device)
        noise = torch.randn_like(x0)
        xt = (1 - t[:, None]) * x0 + t[:, None] * noise
        loss = F.mse_loss(model(xt, t), noise)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        ema.update()


@torch.no_grad()
def evaluate(net, data):
    t = torch.full((data.shape[0],), 0.5, device=data.device)
    noise = torch.randn_like(data)
    xt = 0.5 * data + 0.5 * noise
    return F.mse_loss(net(xt, t), noise).item()


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.randn(1024, 32, device=device) * 0.5 + 1.0
    model = Denoiser().to(device)
    ema = PowerFunctionEMA(model)
    train(model, ema, data, steps=60)
    print(f"online mse {evaluate(model, data):.4f}  ema mse {evaluate(ema, data):.4f}")
