# source: https://github.com/nerfstudio-project/nerfacc/issues/307
# area: AMP
# bug: the discriminator update backpropagates a scaler-scaled loss but then calls opt_d.step() directly instead of scaler.step(opt_d); on GPU its SGD step uses gradients multiplied by the loss scale (~65536x) and inf/NaN steps are never skipped
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
use_amp = device.type == "cuda"
Z_DIM, X_DIM = 8, 2


def real_batch(n=64):
    angle = torch.rand(n) * 6.2832
    pts = torch.stack([angle.cos(), angle.sin()], 1) * 2.0
    return pts + 0.05 * torch.randn_like(pts)


G = nn.Sequential(nn.Linear(Z_DIM, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, X_DIM)).to(device)
D = nn.Sequential(nn.Linear(X_DIM, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)).to(device)
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.SGD(D.parameters(), lr=1e-2, momentum=0.9)
scaler = torch.amp.GradScaler("cuda", enabled=use_amp)


def d_step(real):
    z = torch.randn(real.size(0), Z_DIM, device=device)
    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
        fake = G(z).detach()
        logits_real, logits_fake = D(real), D(fake)
        loss_d = F.binary_cross_entropy_with_logits(logits_real, torch.ones_like(logits_real)) + \
            F.binary_cross_entropy_with_logits(logits_fake, torch.zeros_like(logits_fake))
    opt_d.zero_grad(set_to_none=True)
    scaler.scale(loss_d).backward()
    opt_d.step()  # expect: any
    return loss_d.detach()


def g_step(n):
    z = torch.randn(n, Z_DIM, device=device)
    with torch.autocast(device_type="cuda", dtype=torch.float16, enabled=use_amp):
        logits = D(G(z))
        loss_g = F.binary_cross_entropy_with_logits(logits, torch.ones_like(logits))
    opt_g.zero_grad(set_to_none=True)
    scaler.scale(loss_g).backward()
    scaler.step(opt_g)
    scaler.update()
    return loss_g.detach()


for it in range(200):
    real = real_batch().to(device)
    ld = d_step(real)
    lg = g_step(real.size(0))
    if it % 50 == 0:
        print(f"iter {it} loss_d {ld.item():.3f} loss_g {lg.item():.3f}")
