# source: https://github.com/IAHispano/Applio/pull/860
# area: AMP
# bug: the discriminator is updated with optim_d.step() directly after a scaled backward, bypassing GradScaler; on a GPU it steps on loss-scaled gradients and applies inf/NaN steps that scaler.step would have skipped
import torch
import torch.nn as nn
import torch.nn.functional as F


class Generator(nn.Module):
    def __init__(self, feat=40, hidden=64, hop=8):
        super().__init__()
        self.pre = nn.Conv1d(feat, hidden, 3, padding=1)
        self.up = nn.ConvTranspose1d(hidden, hidden // 2, hop * 2, stride=hop, padding=hop // 2)
        self.post = nn.Conv1d(hidden // 2, 1, 7, padding=3)

    def forward(self, mel):
        h = F.leaky_relu(self.pre(mel), 0.1)
        h = F.leaky_relu(self.up(h), 0.1)
        return torch.tanh(self.post(h))


class WaveDiscriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([
            nn.Conv1d(1, 16, 15, 1, 7),
            nn.Conv1d(16, 32, 41, 4, 20, groups=4),
            nn.Conv1d(32, 32, 41, 4, 20, groups=8),
        ])
        self.out = nn.Conv1d(32, 1, 3, 1, 1)

    def forward(self, wav):
        for conv in self.convs:
            wav = F.leaky_relu(conv(wav), 0.1)
        return self.out(wav)


def disc_loss(real_out, fake_out):
    return torch.mean((1 - real_out.float()) ** 2) + torch.mean(fake_out.float() ** 2)


def gen_loss(fake_out, fake_wav, real_wav):
    adv = torch.mean((1 - fake_out.float()) ** 2)
    return adv + 45.0 * F.l1_loss(fake_wav.float(), real_wav.float())


def train(steps=4):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    net_g, net_d = Generator().to(device), WaveDiscriminator().to(device)
    optim_g = torch.optim.AdamW(net_g.parameters(), lr=2e-4, betas=(0.8, 0.99), eps=1e-9)
    optim_d = torch.optim.AdamW(net_d.parameters(), lr=2e-4, betas=(0.8, 0.99), eps=1e-9)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for _ in range(steps):
        mel = torch.randn(2, 40, 32, device=device)
        real = torch.tanh(torch.randn(2, 1, 256, device=device))
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            fake = net_g(mel)
            loss_d = disc_loss(net_d(real), net_d(fake.detach()))
        optim_d.zero_grad(set_to_none=True)
        scaler.scale(loss_d).backward()
        optim_d.step()  # expect: any

        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            loss_g = gen_loss(net_d(fake), fake, real)
        optim_g.zero_grad(set_to_none=True)
        scaler.scale(loss_g).backward()
        scaler.unscale_(optim_g)
        torch.nn.utils.clip_grad_norm_(net_g.parameters(), 1000.0)
        scaler.step(optim_g)
        scaler.update()
    return loss_d.detach(), loss_g.detach()


if __name__ == "__main__":
    torch.manual_seed(0)
    d, g = train()
    print(f"loss_d={float(d):.4f} loss_g={float(g):.4f}")
