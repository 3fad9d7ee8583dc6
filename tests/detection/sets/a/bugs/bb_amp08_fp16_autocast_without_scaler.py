# source: https://github.com/engichang1467/Open-Rig3R/issues/35
# area: AMP
# bug: training_step enters CUDA autocast with its default dtype (float16) but backpropagates the unscaled loss and steps the optimizer directly (no GradScaler); small fp16 gradients (the bounded cosine ray term) underflow to zero on GPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class RigDataset(Dataset):
    def __init__(self, n=128):
        self.images = torch.rand(n, 3, 32, 32)
        self.depth = torch.rand(n, 1, 32, 32) * 30.0
        rays = torch.randn(n, 3, 32, 32)
        self.rays = rays / rays.norm(dim=1, keepdim=True)

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        return {"image": self.images[i], "depth": self.depth[i], "rays": self.rays[i]}


class PointmapNet(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.GELU(), nn.Conv2d(ch, ch, 3, padding=1), nn.GELU())
        self.depth_head = nn.Conv2d(ch, 1, 1)
        self.ray_head = nn.Conv2d(ch, 3, 1)

    def forward(self, img):
        h = self.enc(img)
        return self.depth_head(h), F.normalize(self.ray_head(h), dim=1)


class MultiTaskTrainer:
    def __init__(self, model, lr=1e-3, ray_weight=0.1):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
        self.ray_weight = ray_weight

    def compute_loss(self, batch):
        depth, rays = self.model(batch["image"])
        depth_loss = F.mse_loss(depth, batch["depth"])
        ray_loss = (1 - F.cosine_similarity(rays, batch["rays"], dim=1)).mean()
        return depth_loss + self.ray_weight * ray_loss

    def training_step(self, batch):
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, enabled=device.type == "cuda"):  # expect[noscale]: any
            loss = self.compute_loss(batch)
        loss.backward()  # expect[noscale]: any
        self.optimizer.step()
        return loss.detach()


trainer = MultiTaskTrainer(PointmapNet().to(device))
loader = DataLoader(RigDataset(), batch_size=16, shuffle=True)
for epoch in range(3):
    losses = [trainer.training_step(b) for b in loader]
    print(f"epoch {epoch} loss {torch.stack(losses).mean().item():.3f}")
