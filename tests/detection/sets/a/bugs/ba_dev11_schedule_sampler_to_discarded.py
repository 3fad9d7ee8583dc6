# source: https://github.com/huggingface/accelerate/issues/2251
# area: device placement
# bug: the timesteps and importance weights returned by the schedule sampler are "moved" with t.to(...) / weights.to(...) without assigning the result, so they stay on the CPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NUM_T = 40


class LossSecondMomentSampler:
    """Importance-samples diffusion timesteps proportionally to sqrt(E[loss^2])."""

    def __init__(self, num_timesteps, history=10):
        self.hist = np.zeros((num_timesteps, history))
        self.count = np.zeros(num_timesteps, dtype=int)

    def weights(self):
        if (self.count < self.hist.shape[1]).any():
            return np.ones(len(self.count))
        w = np.sqrt((self.hist ** 2).mean(axis=1))
        return 0.9 * w / w.sum() + 0.1 / len(w)

    def sample(self, batch_size):
        w = self.weights()
        p = w / w.sum()
        idx = np.random.choice(len(p), size=(batch_size,), p=p)
        t = torch.from_numpy(idx).long()
        weights = torch.from_numpy(1.0 / (len(p) * p[idx])).float()
        return t, weights

    def update(self, t, losses):
        for ti, li in zip(t.tolist(), losses.tolist()):
            self.hist[ti] = np.roll(self.hist[ti], -1)
            self.hist[ti, -1] = li
            self.count[ti] = min(self.count[ti] + 1, self.hist.shape[1])


class Eps(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.temb = nn.Embedding(NUM_T, 32)
        self.net = nn.Sequential(nn.Linear(dim + 32, 64), nn.SiLU(), nn.Linear(64, dim))

    def forward(self, x, t):
        return self.net(torch.cat([x, self.temb(t)], dim=-1))


def main():
    betas = torch.linspace(1e-4, 0.05, NUM_T)
    alphas_cumprod = torch.cumprod(1 - betas, 0).to(device)
    data = torch.randn(512, 4) * torch.tensor([1.0, 0.5, 2.0, 0.1])
    model = Eps().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    sampler = LossSecondMomentSampler(NUM_T)
    for step in range(80):
        batch = data[torch.randint(0, 512, (64,))].to(device)
        t, weights = sampler.sample(batch.shape[0])
        t.to(batch.device)  # expect[t]: any
        weights.to(batch.device)  # expect[t]: any
        noise = torch.randn_like(batch)
        a = alphas_cumprod[t].unsqueeze(-1)
        xt = a.sqrt() * batch + (1 - a).sqrt() * noise
        per_sample = F.mse_loss(model(xt, t), noise, reduction="none").mean(-1)
        loss = (per_sample * weights).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        sampler.update(t, per_sample.detach().cpu())
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
