# source: https://github.com/microsoft/Swin-Transformer/issues/311
# area: AMP
# bug: with gradient accumulation, scaler.unscale_ (and clipping) runs on every micro-batch while step/update run only every N; on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
import torch
import torch.nn as nn
import torch.nn.functional as F


class PretrainConfig:
    def __init__(self, device):
        self.device = device
        self.amp_enable = device.type == "cuda"
        self.accumulation_steps = 4
        self.clip_grad = 5.0
        self.patch = 4
        self.image_size = 32
        self.mask_ratio = 0.6
        self.base_lr = 1e-3
        self.micro_batches = 8


class SimMIM(nn.Module):
    def __init__(self, patch=4, dim=48):
        super().__init__()
        self.patch = patch
        self.embed = nn.Conv2d(3, dim, patch, patch)
        self.mask_token = nn.Parameter(torch.zeros(1, dim, 1, 1))
        self.encoder = nn.Sequential(nn.Conv2d(dim, dim, 3, 1, 1), nn.GELU(), nn.Conv2d(dim, dim, 3, 1, 1), nn.GELU())
        self.decoder = nn.Conv2d(dim, 3 * patch * patch, 1)

    def forward(self, images, mask):
        z = self.embed(images)
        w = mask.unsqueeze(1).to(z.dtype)
        z = z * (1 - w) + self.mask_token.to(z.dtype) * w
        rec = F.pixel_shuffle(self.decoder(self.encoder(z)), self.patch)
        pix_mask = mask.repeat_interleave(self.patch, 1).repeat_interleave(self.patch, 2).unsqueeze(1)
        err = F.l1_loss(rec.float(), images, reduction="none") * pix_mask
        return err.sum() / (pix_mask.sum() * 3 + 1e-5)


def random_mask(cfg, batch):
    side = cfg.image_size // cfg.patch
    return (torch.rand(batch, side, side, device=cfg.device) < cfg.mask_ratio).float()


def train_one_epoch(cfg, model, optimizer, scaler):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    total = torch.zeros((), device=cfg.device)
    for idx in range(cfg.micro_batches):
        images = torch.rand(8, 3, cfg.image_size, cfg.image_size, device=cfg.device)
        mask = random_mask(cfg, images.size(0))
        with torch.autocast(device_type=cfg.device.type, dtype=torch.float16, enabled=cfg.amp_enable):
            loss = model(images, mask)
        loss = loss / cfg.accumulation_steps
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # expect: any
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_grad)
        if (idx + 1) % cfg.accumulation_steps == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
        total += loss.detach()
    return total / (cfg.micro_batches // cfg.accumulation_steps)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = PretrainConfig(device)
    model = SimMIM(cfg.patch).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.base_lr, weight_decay=0.05)
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.amp_enable)
    for epoch in range(2):
        avg = train_one_epoch(cfg, model, optimizer, scaler)
        print(f"epoch {epoch} loss {avg.item():.4f}")


if __name__ == "__main__":
    main()
