# source: https://github.com/Nerogar/OneTrainer/pull/1608
# area: transfer & sync
# bug: after the VAE is offloaded to CPU, scale_latents copies its batch-norm running stats host-to-device with a blocking .to() on every training step
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyVAE(nn.Module):
    def __init__(self, latent_ch=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.SiLU(), nn.Conv2d(32, latent_ch, 4, 2, 1))
        self.bn = nn.BatchNorm2d(latent_ch, affine=False, eps=1e-4)

    @torch.no_grad()
    def encode(self, images):
        z = self.encoder(images)
        self.bn.train()
        self.bn(z)
        return z


def scale_latents(latents, vae):
    mean = vae.bn.running_mean.to(latents.device).view(1, -1, 1, 1)  # expect[bn]: any
    std = torch.sqrt(vae.bn.running_var.to(latents.device).view(1, -1, 1, 1) + vae.bn.eps)  # expect[bn]: any
    return (latents - mean) / std


class Denoiser(nn.Module):
    def __init__(self, ch=8, width=64):
        super().__init__()
        self.t_embed = nn.Sequential(nn.Linear(1, width), nn.SiLU(), nn.Linear(width, width))
        self.inp = nn.Conv2d(ch, width, 3, padding=1)
        self.mid = nn.Sequential(nn.SiLU(), nn.Conv2d(width, width, 3, padding=1), nn.SiLU())
        self.out = nn.Conv2d(width, ch, 3, padding=1)

    def forward(self, x, t):
        h = self.inp(x) + self.t_embed(t.view(-1, 1)).view(x.shape[0], -1, 1, 1)
        return self.out(self.mid(h))


def cache_latents(vae, n_images=64, batch_size=16, size=32):
    vae.to(device)
    cache = []
    for i in range(0, n_images, batch_size):
        images = torch.rand(batch_size, 3, size, size, device=device) * 2 - 1
        cache.append(vae.encode(images))
    vae.to("cpu")
    return torch.cat(cache)


def train(vae, model, latents, steps=60, batch_size=16):
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4)
    running = torch.zeros((), device=device)
    for step in range(1, steps + 1):
        idx = torch.randint(0, latents.shape[0], (batch_size,), device=device)
        x0 = scale_latents(latents[idx], vae)
        noise = torch.randn_like(x0)
        t = torch.rand(batch_size, device=device)
        xt = (1 - t.view(-1, 1, 1, 1)) * x0 + t.view(-1, 1, 1, 1) * noise
        loss = F.mse_loss(model(xt, t), noise - x0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
        if step % 20 == 0:
            print(f"step {step}: flow-matching loss {(running / 20).item():.4f}")
            running.zero_()


def main():
    torch.manual_seed(0)
    vae = TinyVAE()
    latents = cache_latents(vae)
    model = Denoiser().to(device)
    train(vae, model, latents)


if __name__ == "__main__":
    main()
