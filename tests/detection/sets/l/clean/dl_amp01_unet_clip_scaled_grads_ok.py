# twin of: bugs/dl_amp01_unet_clip_scaled_grads.py
# area: AMP
# correct: the scaler unscales the optimizer gradients before clipping, so the clip norm applies to the true gradients
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.block(x)


class TinyUNet(nn.Module):
    def __init__(self, n_channels=3, n_classes=2, base=16):
        super().__init__()
        self.n_classes = n_classes
        self.inc = DoubleConv(n_channels, base)
        self.down = DoubleConv(base, base * 2)
        self.up = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.dec = DoubleConv(base * 2, base)
        self.outc = nn.Conv2d(base, n_classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down(F.max_pool2d(x1, 2))
        x = self.dec(torch.cat([self.up(x2), x1], dim=1))
        return self.outc(x)


def dice_loss(logits, target, n_classes, eps=1e-6):
    probs = F.softmax(logits.float(), dim=1)
    onehot = F.one_hot(target, n_classes).permute(0, 3, 1, 2).float()
    inter = (probs * onehot).sum(dim=(0, 2, 3))
    union = probs.sum(dim=(0, 2, 3)) + onehot.sum(dim=(0, 2, 3))
    return 1 - ((2 * inter + eps) / (union + eps)).mean()


def make_loader(n=32, size=32, batch_size=8):
    images = torch.rand(n, 3, size, size)
    masks = (images.mean(dim=1) > 0.5).long()
    return DataLoader(TensorDataset(images, masks), batch_size=batch_size, shuffle=True,
                      pin_memory=device.type == "cuda")


def train_model(model, loader, epochs=2, learning_rate=1e-3, amp=True, gradient_clipping=1.0):
    use_amp = amp and device.type == "cuda"
    optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate, weight_decay=1e-8, momentum=0.9)
    grad_scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(1, epochs + 1):
        model.train()
        epoch_loss = torch.zeros((), device=device)
        for images, true_masks in loader:
            images = images.to(device, non_blocking=True)
            true_masks = true_masks.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
                masks_pred = model(images)
                loss = criterion(masks_pred, true_masks)
                loss = loss + dice_loss(masks_pred, true_masks, model.n_classes)

            optimizer.zero_grad(set_to_none=True)
            grad_scaler.scale(loss).backward()
            grad_scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
            grad_scaler.step(optimizer)
            grad_scaler.update()
            epoch_loss += loss.detach()
        print(f"epoch {epoch}: mean loss {epoch_loss.item() / len(loader):.4f}")
    return model


if __name__ == "__main__":
    torch.manual_seed(0)
    net = TinyUNet().to(device)
    train_model(net, make_loader())
