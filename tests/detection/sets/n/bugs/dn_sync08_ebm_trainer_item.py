# source: https://github.com/soran-ghaderi/torchebm/issues/239
# area: transfer & sync
# bug: the trainer's train_step converts loss and both energies with .item() on every step, three blocking GPU->CPU syncs per iteration just for bookkeeping
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class EnergyNet(nn.Module):
    def __init__(self, dim=2, hidden=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.SiLU(),
                                 nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


class ReplayBuffer:
    def __init__(self, capacity, dim):
        self.data = torch.rand(capacity, dim, device=device) * 4 - 2
        self.capacity = capacity
        self.ptr = 0

    def sample(self, n):
        idx = torch.randint(0, self.capacity, (n,), device=device)
        return self.data[idx]

    def push(self, x):
        n = x.shape[0]
        pos = (self.ptr + torch.arange(n, device=device)) % self.capacity
        self.data[pos] = x.detach()
        self.ptr = (self.ptr + n) % self.capacity


class LangevinSampler:
    def __init__(self, model, step_size=0.01, noise=0.005, n_steps=8):
        self.model, self.step_size, self.noise, self.n_steps = model, step_size, noise, n_steps

    def run(self, x):
        x = x.clone().requires_grad_(True)
        for _ in range(self.n_steps):
            grad, = torch.autograd.grad(self.model(x).sum(), x)
            x = (x - self.step_size * grad + self.noise * torch.randn_like(x)).detach().requires_grad_(True)
        return x.detach()


class ContrastiveDivergenceTrainer:
    def __init__(self, model, lr=1e-3, alpha=0.1, batch_size=128):
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)
        self.sampler = LangevinSampler(model)
        self.buffer = ReplayBuffer(4096, 2)
        self.alpha, self.batch_size = alpha, batch_size

    def train_step(self, x_pos):
        x_neg = self.sampler.run(self.buffer.sample(self.batch_size))
        self.buffer.push(x_neg)
        e_pos = self.model(x_pos).mean()
        e_neg = self.model(x_neg).mean()
        loss = e_pos - e_neg + self.alpha * (e_pos ** 2 + e_neg ** 2)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return {
            "loss": loss.item(),  # expect[it]: any
            "e_pos": e_pos.item(),  # expect[it]: any
            "e_neg": e_neg.item(),  # expect[it]: any
        }

    def fit(self, data_fn, steps, log_every=10):
        history = []
        for step in range(steps):
            metrics = self.train_step(data_fn(self.batch_size))
            history.append(metrics)
            if step % log_every == 0:
                print(f"step {step:3d} loss {metrics['loss']:+.4f} "
                      f"E+ {metrics['e_pos']:+.3f} E- {metrics['e_neg']:+.3f}")
        return history


def two_moons(n):
    t = torch.rand(n, device=device) * torch.pi
    upper = torch.rand(n, device=device) < 0.5
    x = torch.where(upper, torch.cos(t), 1 - torch.cos(t))
    y = torch.where(upper, torch.sin(t), 0.5 - torch.sin(t))
    return torch.stack([x, y], dim=1) + 0.05 * torch.randn(n, 2, device=device)


if __name__ == "__main__":
    torch.manual_seed(0)
    trainer = ContrastiveDivergenceTrainer(EnergyNet().to(device))
    trainer.fit(two_moons, steps=20, log_every=5)
