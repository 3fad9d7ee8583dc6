# source: https://github.com/qubvel-org/segmentation_models.pytorch/issues/463
# area: AMP
# bug: the dice loss runs outside autocast on the fp16 logits and casts the mask to the prediction dtype, so the pixel sums exceed 65504 and become inf on CUDA, giving a NaN loss
import torch
import torch.nn as nn
import torch.nn.functional as F


class DiceLoss(nn.Module):
    def __init__(self, smooth=0.0, eps=1e-7):
        super().__init__()
        self.smooth = smooth
        self.eps = eps

    def soft_dice_score(self, probs, target):
        intersection = torch.sum(probs * target)  # expect[sum]: any
        cardinality = torch.sum(probs + target)  # expect[sum]: any
        return (2.0 * intersection + self.smooth) / (cardinality + self.smooth).clamp_min(self.eps)

    def forward(self, logits, mask):
        probs = logits.sigmoid()
        mask = mask.type_as(probs)
        return 1.0 - self.soft_dice_score(probs, mask)


class TinySegNet(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(ch, 1, 1)

    def forward(self, x):
        return self.head(self.enc(x))


def make_batch(batch, size, device, gen):
    img = torch.rand(batch, 3, size, size, generator=gen)
    mask = (img.mean(1, keepdim=True) > 0.45).float()
    return img.to(device), mask.to(device)


def fit(device, steps=2, batch=3, size=160):
    use_amp = device.type == "cuda"
    model = TinySegNet().to(device)
    criterion = DiceLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    gen = torch.Generator().manual_seed(0)
    history = []
    for _ in range(steps):
        img, mask = make_batch(batch, size, device, gen)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(img)
        loss = criterion(logits, mask)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        history.append(loss.detach())
    return torch.stack(history)


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    losses = fit(device)
    print("dice losses:", [round(v, 4) for v in losses.tolist()])
