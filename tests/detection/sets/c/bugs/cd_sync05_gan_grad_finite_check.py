# source: https://github.com/HyperGAN/HyperGAN/pull/355
# area: transfer & sync
# bug: the gradient guard evaluates torch.isfinite(p.grad).all() in a Python if for every parameter tensor, one blocking device->host read per parameter per step
import torch
import torch.nn as nn


class NonFiniteGradient(RuntimeError):
    pass


def mlp(sizes, act=nn.LeakyReLU(0.2), last=None):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(act)
    if last is not None:
        layers.append(last)
    return nn.Sequential(*layers)


class ReferenceTrainer:
    def __init__(self, z_dim=32, x_dim=64, device=None):
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.z_dim = z_dim
        self.G = mlp([z_dim, 128, 128, x_dim], last=nn.Tanh()).to(self.device)
        self.D = mlp([x_dim, 128, 128, 1]).to(self.device)
        self.opt_g = torch.optim.Adam(self.G.parameters(), lr=2e-4, betas=(0.5, 0.99))
        self.opt_d = torch.optim.Adam(self.D.parameters(), lr=2e-4, betas=(0.5, 0.99))
        self.ema = mlp([z_dim, 128, 128, x_dim], last=nn.Tanh()).to(self.device)
        self.ema.load_state_dict(self.G.state_dict())
        self.ema.requires_grad_(False)

    def _check_gradients(self, module, name):
        for pname, p in module.named_parameters():
            if p.grad is None:
                continue
            if not torch.isfinite(p.grad).all():  # expect: any
                raise NonFiniteGradient(f"{name}.{pname} has non-finite gradient")

    @torch.no_grad()
    def update_ema(self, decay=0.999):
        ema_params = list(self.ema.parameters())
        g_params = list(self.G.parameters())
        torch._foreach_lerp_(ema_params, g_params, 1.0 - decay)

    def _update(self, real):
        z = torch.randn(real.shape[0], self.z_dim, device=self.device)
        fake = self.G(z)
        d_loss = (nn.functional.softplus(self.D(fake.detach())) + nn.functional.softplus(-self.D(real))).mean()
        self.opt_d.zero_grad(set_to_none=True)
        d_loss.backward()
        self._check_gradients(self.D, "D")
        self.opt_d.step()

        g_loss = nn.functional.softplus(-self.D(fake)).mean()
        self.opt_g.zero_grad(set_to_none=True)
        g_loss.backward()
        self._check_gradients(self.G, "G")
        self.opt_g.step()
        self.update_ema()
        return torch.stack([d_loss.detach(), g_loss.detach()])

    def fit(self, data, steps, batch_size=64):
        log = []
        for step in range(steps):
            idx = torch.randint(0, data.shape[0], (batch_size,), device=self.device)
            log.append(self._update(data[idx]))
        return torch.stack(log)


if __name__ == "__main__":
    torch.manual_seed(0)
    trainer = ReferenceTrainer()
    centers = torch.randn(8, 64)
    data = (centers[torch.randint(0, 8, (2048,))] + 0.05 * torch.randn(2048, 64)).to(trainer.device)
    log = trainer.fit(data, steps=30)
    d, g = log[-10:].mean(dim=0).tolist()
    print(f"last-10 mean  D {d:.4f}  G {g:.4f}")
