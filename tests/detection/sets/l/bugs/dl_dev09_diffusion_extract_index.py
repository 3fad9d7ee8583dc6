# source: https://github.com/open-mmlab/mmgeneration/pull/476
# area: device placement
# bug: the numpy noise-schedule arrays are turned into CPU tensors and indexed with the sampled timesteps, which live on the GPU; indexing a CPU tensor with cuda indices raises on a GPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def cosine_beta_schedule(num_timesteps, s=0.008):
    steps = np.arange(num_timesteps + 1, dtype=np.float64) / num_timesteps
    alphas_cumprod = np.cos((steps + s) / (1 + s) * np.pi / 2) ** 2
    betas = 1 - alphas_cumprod[1:] / alphas_cumprod[:-1]
    return np.clip(betas, 0, 0.999)


def extract_into_tensor(arr, timesteps, broadcast_shape):
    var_indexed = torch.from_numpy(arr)[timesteps].float()  # expect[x]: any
    var_indexed = var_indexed.to(timesteps.device)  # expect[x]: any
    while var_indexed.dim() < len(broadcast_shape):
        var_indexed = var_indexed[..., None]
    return var_indexed.expand(broadcast_shape)


class GaussianDiffusion:
    def __init__(self, num_timesteps=200):
        self.num_timesteps = num_timesteps
        betas = cosine_beta_schedule(num_timesteps)
        alphas_cumprod = np.cumprod(1.0 - betas)
        self.sqrt_alphas_cumprod = np.sqrt(alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = np.sqrt(1.0 - alphas_cumprod)
        self.loss_weight = 1.0 / np.maximum(1.0 - alphas_cumprod, 1e-3)

    def q_sample(self, x_start, t, noise):
        a = extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape)
        b = extract_into_tensor(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape)
        return a * x_start + b * noise

    def training_losses(self, model, x_start, t):
        noise = torch.randn_like(x_start)
        x_t = self.q_sample(x_start, t, noise)
        eps = model(x_t, t)
        per_sample = F.mse_loss(eps, noise, reduction="none").mean(dim=(1, 2, 3))
        w = extract_into_tensor(self.loss_weight, t, per_sample.shape)
        return (w * per_sample).mean() / w.mean()


class TinyDenoiser(nn.Module):
    def __init__(self, channels=3, hidden=32, num_timesteps=200):
        super().__init__()
        self.time_embed = nn.Embedding(num_timesteps, hidden)
        self.inp = nn.Conv2d(channels, hidden, 3, padding=1)
        self.mid = nn.Conv2d(hidden, hidden, 3, padding=1)
        self.out = nn.Conv2d(hidden, channels, 3, padding=1)

    def forward(self, x, t):
        h = F.silu(self.inp(x) + self.time_embed(t)[:, :, None, None])
        h = F.silu(self.mid(h))
        return self.out(h)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    diffusion = GaussianDiffusion(num_timesteps=200)
    model = TinyDenoiser(num_timesteps=200).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4)
    data = torch.tanh(torch.randn(64, 3, 16, 16, device=device))
    losses = []
    for it in range(20):
        idx = torch.randint(0, data.size(0), (16,), device=device)
        x_start = data[idx]
        t = torch.randint(0, diffusion.num_timesteps, (x_start.size(0),), device=device)
        loss = diffusion.training_losses(model, x_start, t)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    print("mean loss over last 10 iters:", round(torch.stack(losses[-10:]).mean().item(), 4))


if __name__ == "__main__":
    main()
