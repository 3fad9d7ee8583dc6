# source: https://github.com/bcmi/SLBR-Visible-Watermark-Removal/issues/10
# area: dtype
# bug: the mask head ends in a Sigmoid and is scored with nn.BCELoss inside fp16 autocast; BCELoss is unsafe to autocast and raises on GPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class WatermarkRemover(nn.Module):
    def __init__(self, ch=24):
        super().__init__()
        self.enc = nn.Sequential(
            nn.Conv2d(3, ch, 3, padding=1), nn.ReLU(),
            nn.Conv2d(ch, ch * 2, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.dec = nn.Sequential(
            nn.ConvTranspose2d(ch * 2, ch, 4, stride=2, padding=1), nn.ReLU(),
        )
        self.image_head = nn.Conv2d(ch, 3, 3, padding=1)
        self.mask_head = nn.Sequential(nn.Conv2d(ch, 1, 3, padding=1), nn.Sigmoid())

    def forward(self, x):
        feat = self.dec(self.enc(x))
        restored = x + self.image_head(feat)
        return restored, self.mask_head(feat)


class RemovalLoss(nn.Module):
    def __init__(self, mask_weight=0.5):
        super().__init__()
        self.pixel_loss = nn.L1Loss()
        self.mask_loss = nn.BCELoss()  # expect[w]: any
        self.mask_weight = mask_weight

    def forward(self, restored, pred_mask, clean, mask):
        pixel = self.pixel_loss(restored, clean)
        mask_term = self.mask_loss(pred_mask, mask)  # expect[w]: any
        return pixel + self.mask_weight * mask_term, pixel.detach(), mask_term.detach()


def synth_batch(batch, size, gen):
    clean = torch.rand(batch, 3, size, size, generator=gen)
    mask = torch.zeros(batch, 1, size, size)
    for i in range(batch):
        y, x = torch.randint(0, size // 2, (2,), generator=gen).tolist()
        mask[i, :, y : y + size // 3, x : x + size // 3] = 1.0
    logo = torch.rand(batch, 3, 1, 1, generator=gen)
    alpha = 0.6
    marked = clean * (1 - alpha * mask) + logo * alpha * mask
    return marked, clean, mask


def main(epochs=2, steps_per_epoch=10, batch=8, size=32):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = WatermarkRemover().to(device)
    criterion = RemovalLoss().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    gen = torch.Generator().manual_seed(0)
    for epoch in range(epochs):
        pix_sum = torch.zeros((), device=device)
        mask_sum = torch.zeros((), device=device)
        for _ in range(steps_per_epoch):
            marked, clean, mask = (t.to(device) for t in synth_batch(batch, size, gen))
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                restored, pred_mask = model(marked)
                loss, pix, msk = criterion(restored, pred_mask, clean, mask)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            pix_sum += pix
            mask_sum += msk
        print(f"epoch {epoch}: l1 {(pix_sum / steps_per_epoch).item():.4f}  "
              f"bce {(mask_sum / steps_per_epoch).item():.4f}")


if __name__ == "__main__":
    main()
