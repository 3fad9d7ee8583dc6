# source: https://github.com/huggingface/diffusers/issues/6501
# area: device placement
# bug: the reproducible noise closure captures a default (CPU) torch.Generator but draws noise with device=x.device, which on CUDA raises "Expected a 'cuda' device type for generator"
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

T_STEPS = 50


def make_schedule(t_steps, device):
    betas = torch.linspace(1e-4, 0.02, t_steps, device=device)
    return torch.cumprod(1.0 - betas, dim=0)


def make_noiser(seed):
    gen = torch.Generator().manual_seed(seed)  # expect[gen]: any

    def sample_noise(like):
        return torch.randn(like.shape, generator=gen, device=like.device, dtype=like.dtype)  # expect[gen]: any

    return sample_noise


class Denoiser(nn.Module):
    def __init__(self, dim=16, hid=64):
        super().__init__()
        self.t_emb = nn.Embedding(T_STEPS, hid)
        self.inp = nn.Linear(dim, hid)
        self.out = nn.Sequential(nn.SiLU(), nn.Linear(hid, hid), nn.SiLU(), nn.Linear(hid, dim))

    def forward(self, x, t):
        return self.out(self.inp(x) + self.t_emb(t))


def main():
    alphas_cumprod = make_schedule(T_STEPS, device)
    sample_noise = make_noiser(seed=1234)
    data = torch.randn(512, 16).cumsum(dim=1) / 4
    model = Denoiser().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(60):
        x0 = data[torch.randint(0, data.size(0), (32,))].to(device)
        t = torch.randint(0, T_STEPS, (x0.size(0),), device=device)
        noise = sample_noise(x0)
        a = alphas_cumprod[t].unsqueeze(1)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        loss = F.mse_loss(model(xt, t), noise)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
