# source: https://github.com/TheLastBen/fast-stable-diffusion/issues/1975
# area: AMP
# bug: on a GPU the trainable encoder and denoiser are loaded straight into float16 and then trained with a GradScaler, so scaler.step() raises "Attempting to unscale FP16 gradients"
import torch
import torch.nn as nn
import torch.nn.functional as F


def pick_weight_dtype(device):
    return torch.float16 if device.type == "cuda" else torch.float32


class PromptEncoder(nn.Module):
    def __init__(self, vocab=128, dim=32):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        h = self.tok(ids)
        return self.norm(h + self.mlp(h)).mean(dim=1)


class TinyDenoiser(nn.Module):
    def __init__(self, ch=4, dim=32):
        super().__init__()
        self.inp = nn.Conv2d(ch, dim, 3, padding=1)
        self.cond = nn.Linear(dim, dim)
        self.mid = nn.Conv2d(dim, dim, 3, padding=1)
        self.out = nn.Conv2d(dim, ch, 3, padding=1)

    def forward(self, latents, text_emb):
        h = F.silu(self.inp(latents))
        h = h + self.cond(text_emb)[:, :, None, None]
        h = F.silu(self.mid(h))
        return self.out(h)


def load_models(device):
    dtype = pick_weight_dtype(device)
    encoder = PromptEncoder().to(device=device, dtype=dtype)  # expect[half]: any
    denoiser = TinyDenoiser().to(device=device, dtype=dtype)  # expect[half]: any
    return encoder, denoiser, dtype


def add_noise(latents, noise, t):
    alpha = torch.cos(t * 1.5707963)[:, None, None, None].to(latents.dtype)
    return alpha * latents + (1 - alpha ** 2).sqrt() * noise


def finetune(device, steps=8, batch=4):
    encoder, denoiser, dtype = load_models(device)
    params = list(encoder.parameters()) + list(denoiser.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    use_amp = device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    prompt_ids = torch.randint(0, 128, (batch, 8), device=device)
    instance_latents = torch.randn(batch, 4, 16, 16, device=device, dtype=dtype)
    running = torch.zeros((), device=device)
    for step in range(steps):
        noise = torch.randn_like(instance_latents)
        t = torch.rand(batch, device=device)
        noisy = add_noise(instance_latents, noise, t)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            emb = encoder(prompt_ids)
            pred = denoiser(noisy, emb)
            loss = F.mse_loss(pred.float(), noise.float())
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        scaler.step(opt)
        scaler.update()
        running += loss.detach()
    return running / steps


if __name__ == "__main__":
    torch.manual_seed(0)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"mean loss {finetune(dev).item():.4f}")
