# twin of: bugs/bb_amp02_clip_before_unscale.py
# area: AMP
# correct: scaler.unscale_(optimizer) runs before clip_grad_norm_, so clipping sees true gradient magnitudes and scaler.step does not unscale twice
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyUNet(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.mid = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(ch, ch, 2, stride=2)
        self.out = nn.Conv2d(ch + 1, 1, 1)

    def forward(self, x):
        h = self.up(self.mid(self.down(x)))
        return self.out(torch.cat([h, x], dim=1))


class Trainer:
    def __init__(self, model, lr=1e-3, max_grad_norm=1.0, amp=True):
        self.model = model
        self.amp = amp and device.type == "cuda"
        self.optimizer = torch.optim.RMSprop(model.parameters(), lr=lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)
        self.max_grad_norm = max_grad_norm

    def _optimizer_step(self):
        self.scaler.unscale_(self.optimizer)
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def train_epoch(self, loader):
        self.model.train()
        total = 0.0
        for img, mask in loader:
            img, mask = img.to(device), mask.to(device)
            with torch.autocast(device_type="cuda", enabled=self.amp):
                logits = self.model(img)
                loss = F.binary_cross_entropy_with_logits(logits, mask)
            self.scaler.scale(loss).backward()
            self._optimizer_step()
            total += loss.detach()
        return (total / len(loader)).item()


imgs = torch.rand(64, 1, 32, 32)
masks = (imgs > 0.5).float()
loader = DataLoader(TensorDataset(imgs, masks), batch_size=16, shuffle=True)
trainer = Trainer(TinyUNet().to(device))
for epoch in range(3):
    print(f"epoch {epoch} loss {trainer.train_epoch(loader):.4f}")
