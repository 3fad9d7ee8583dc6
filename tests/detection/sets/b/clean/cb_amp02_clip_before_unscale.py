# twin of: bugs/cb_amp02_clip_before_unscale.py
# area: AMP
# correct: scaler.unscale_(optimizer) is called before clip_grad_norm_, so the clipping threshold applies to the true gradients and scaler.step() does not unscale twice
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
amp = device.type == "cuda"


class ShapesDataset(Dataset):
    """Random images with a bright square; mask marks the square."""

    def __init__(self, n=16, size=16):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        img = torch.rand(1, self.size, self.size, generator=g) * 0.3
        mask = torch.zeros(self.size, self.size, dtype=torch.long)
        r, c = torch.randint(0, self.size - 4, (2,), generator=g).tolist()
        img[:, r:r + 4, c:c + 4] += 0.7
        mask[r:r + 4, c:c + 4] = 1
        return img, mask


def double_conv(c_in, c_out):
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
                         nn.Conv2d(c_out, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


class MiniUNet(nn.Module):
    def __init__(self, n_classes=2):
        super().__init__()
        self.inc = double_conv(1, 16)
        self.down = nn.Sequential(nn.MaxPool2d(2), double_conv(16, 32))
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec = double_conv(32, 16)
        self.outc = nn.Conv2d(16, n_classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down(x1)
        x = self.dec(torch.cat([self.up(x2), x1], dim=1))
        return self.outc(x)


def train_model(model, loader, epochs=2, lr=1e-3, gradient_clipping=1.0):
    optimizer = torch.optim.RMSprop(model.parameters(), lr=lr, weight_decay=1e-8, momentum=0.9)
    grad_scaler = torch.amp.GradScaler("cuda", enabled=amp)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        epoch_loss = 0.0
        for images, masks in loader:
            images, masks = images.to(device), masks.to(device)
            with torch.autocast(device.type if device.type != "mps" else "cpu", enabled=amp):
                logits = model(images)
                loss = criterion(logits, masks)
            optimizer.zero_grad(set_to_none=True)
            grad_scaler.scale(loss).backward()
            grad_scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
            grad_scaler.step(optimizer)
            grad_scaler.update()
            epoch_loss += loss.item()
        print(f"epoch {epoch}: loss {epoch_loss / len(loader):.4f}")


if __name__ == "__main__":
    loader = DataLoader(ShapesDataset(), batch_size=8, shuffle=True)
    model = MiniUNet().to(device)
    train_model(model, loader)
