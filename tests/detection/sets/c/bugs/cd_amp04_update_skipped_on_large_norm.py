# source: https://github.com/Haian-Jin/LVSM/pull/19
# area: AMP
# bug: when the grad norm is too large the loop `continue`s after scaler.unscale_ without calling scaler.update(); on a GPU the next iteration's unscale_ raises "unscale_() has already been called on this optimizer since the last update()"
import torch
import torch.nn as nn
import torch.nn.functional as F


class ViewRenderer(nn.Module):
    """Predicts a target view from a source view and a relative camera pose."""

    def __init__(self, ch=3, width=48):
        super().__init__()
        self.pose_mlp = nn.Sequential(nn.Linear(12, width), nn.ReLU(), nn.Linear(width, width))
        self.enc = nn.Conv2d(ch, width, 3, padding=1)
        self.dec = nn.Sequential(nn.ReLU(), nn.Conv2d(width, width, 3, padding=1), nn.ReLU(), nn.Conv2d(width, ch, 1))

    def forward(self, src, pose):
        h = self.enc(src) + self.pose_mlp(pose.flatten(1))[:, :, None, None]
        return torch.sigmoid(self.dec(h))


def sample_batch(batch, size, device, step):
    src = torch.rand(batch, 3, size, size, device=device)
    pose = torch.randn(batch, 3, 4, device=device) * (40.0 if step % 7 == 3 else 1.0)
    tgt = torch.roll(src, shifts=1, dims=-1)
    return src, pose, tgt


def psnr(pred, tgt):
    return -10.0 * torch.log10(F.mse_loss(pred, tgt) + 1e-10)


def train(total_steps=25, batch=8, size=24, warn_norm=0.5, skip_norm=1.0):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = ViewRenderer().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    skipped = 0
    metrics = torch.zeros(2, device=device)

    for step in range(total_steps):
        src, pose, tgt = sample_batch(batch, size, device, step)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            pred = model(src, pose)
            loss = F.mse_loss(pred.float(), tgt) + 0.1 * F.l1_loss(pred.float(), tgt)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), warn_norm)
        if not torch.isfinite(grad_norm) or grad_norm > skip_norm:
            skipped += 1
            continue  # expect[w]: any
        scaler.step(optimizer)
        scaler.update()  # expect[w]: any
        scheduler.step()
        metrics += torch.stack([loss.detach(), psnr(pred.detach().float(), tgt)])

    done = max(total_steps - skipped, 1)
    loss_avg, psnr_avg = (metrics / done).tolist()
    print(f"steps={total_steps} skipped={skipped} loss={loss_avg:.4f} psnr={psnr_avg:.2f}")


if __name__ == "__main__":
    torch.manual_seed(0)
    train()
