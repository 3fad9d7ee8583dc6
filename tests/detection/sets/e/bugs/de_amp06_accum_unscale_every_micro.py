# source: https://github.com/huggingface/accelerate/issues/641
# area: AMP
# bug: with gradient accumulation, scaler.unscale_ runs on every micro-batch but scaler.update only on the stepping one, so on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedPatchModel(nn.Module):
    def __init__(self, patch=4, dim=48, img=32):
        super().__init__()
        self.patch = patch
        self.embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.mask_token = nn.Parameter(torch.zeros(1, dim, 1, 1))
        self.encoder = nn.Sequential(nn.Conv2d(dim, dim, 3, padding=1), nn.GELU(), nn.Conv2d(dim, dim, 3, padding=1))
        self.decoder = nn.Conv2d(dim, 3 * patch * patch, 1)

    def forward(self, img, mask):
        x = self.embed(img)
        m = mask.unsqueeze(1).to(x.dtype)
        x = x * (1 - m) + self.mask_token.to(x.dtype) * m
        x = self.decoder(self.encoder(x))
        rec = F.pixel_shuffle(x, self.patch)
        pix_mask = mask.repeat_interleave(self.patch, 1).repeat_interleave(self.patch, 2).unsqueeze(1)
        return (F.l1_loss(rec.float(), img, reduction="none") * pix_mask).sum() / (pix_mask.sum() * 3 + 1e-5)


def random_masks(batch, grid, ratio, device):
    return (torch.rand(batch, grid, grid, device=device) < ratio).float()


def train_one_epoch(cfg, model, optimizer, scheduler, scaler, device):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss_sum = torch.zeros((), device=device)
    for idx in range(cfg["iters"]):
        img = torch.randn(cfg["batch"], 3, 32, 32, device=device)
        mask = random_masks(cfg["batch"], 8, 0.6, device)
        with torch.autocast(device.type, dtype=torch.float16, enabled=cfg["amp"]):
            loss = model(img, mask) / cfg["accum_steps"]
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)  # expect: any
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["clip"])
        if (idx + 1) % cfg["accum_steps"] == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
        loss_sum += loss.detach()
    return loss_sum / cfg["iters"]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = {"iters": 8, "batch": 8, "accum_steps": 2, "clip": 5.0, "amp": device.type == "cuda", "epochs": 2}
    model = MaskedPatchModel().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg["epochs"] * cfg["iters"])
    scaler = torch.amp.GradScaler("cuda", enabled=cfg["amp"])
    for epoch in range(cfg["epochs"]):
        avg = train_one_epoch(cfg, model, optimizer, scheduler, scaler, device)
        print(f"epoch {epoch} loss {avg.item():.4f}")


if __name__ == "__main__":
    main()
