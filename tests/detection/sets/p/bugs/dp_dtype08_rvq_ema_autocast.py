# source: https://github.com/pytorch/pytorch/issues/79085
# area: dtype
# bug: the EMA codebook statistics are float32 buffers, but inside CUDA autocast the batch statistics come out of a matmul as float16, and lerp_ refuses an end tensor of another dtype
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_AMP = device.type == "cuda"


class EMACodebook(nn.Module):
    def __init__(self, dim, size, decay=0.99, eps=1e-5):
        super().__init__()
        self.decay, self.eps = decay, eps
        embed = torch.randn(size, dim)
        self.register_buffer("embed", embed)
        self.register_buffer("embed_avg", embed.clone())
        self.register_buffer("cluster_size", torch.ones(size))

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.embed.t() + self.embed.pow(2).sum(1)
        codes = dist.argmin(dim=1)
        quant = F.embedding(codes, self.embed).view_as(x)
        if self.training:
            onehot = F.one_hot(codes, self.embed.shape[0]).type(flat.dtype)
            embed_sum = onehot.t() @ flat.detach()
            self.cluster_size.lerp_(onehot.sum(0), 1 - self.decay)
            self.embed_avg.lerp_(embed_sum, 1 - self.decay)  # expect: any
            n = self.cluster_size.sum()
            smoothed = (self.cluster_size + self.eps) / (n + self.embed.shape[0] * self.eps) * n
            self.embed.copy_(self.embed_avg / smoothed.unsqueeze(1))
        commit = F.mse_loss(x, quant.detach())
        return x + (quant - x).detach(), codes.view(x.shape[:-1]), commit


class ResidualVQ(nn.Module):
    def __init__(self, dim, n_quantizers=4, size=128):
        super().__init__()
        self.layers = nn.ModuleList(EMACodebook(dim, size) for _ in range(n_quantizers))

    def forward(self, x):
        residual, out, losses = x, torch.zeros_like(x), []
        for layer in self.layers:
            q, _, loss = layer(residual)
            residual = residual - q.detach()
            out = out + q
            losses.append(loss)
        return out, torch.stack(losses).sum()


class SoundStreamLite(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv1d(1, 16, 7, stride=4, padding=3), nn.ELU(),
                                     nn.Conv1d(16, dim, 7, stride=4, padding=3))
        self.quantizer = ResidualVQ(dim)
        self.decoder = nn.Sequential(nn.ConvTranspose1d(dim, 16, 4, stride=4), nn.ELU(),
                                     nn.ConvTranspose1d(16, 1, 4, stride=4))

    def forward(self, wav):
        z = self.encoder(wav).transpose(1, 2)
        q, commit = self.quantizer(z)
        return self.decoder(q.transpose(1, 2)), commit


def train(steps=3):
    torch.manual_seed(0)
    model = SoundStreamLite().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=USE_AMP)
    history = torch.zeros(steps, device=device)
    for step in range(steps):
        wav = torch.randn(2, 1, 1024, device=device).tanh()
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=USE_AMP):
            recon, commit = model(wav)
            loss = F.l1_loss(recon, wav) + 0.25 * commit
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        history[step] = loss.detach()
    print("loss history:", [round(v, 4) for v in history.tolist()])


if __name__ == "__main__":
    train()
