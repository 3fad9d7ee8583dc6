# source: https://github.com/FoundationVision/ByteTrack/pull/184
# area: dtype
# bug: the fp16 path used on CUDA casts the whole target tensor, integer track ids included, to half; ids above 2048 get rounded so the ReID head is trained on wrong identities
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class SyntheticMOT(Dataset):
    def __init__(self, n_frames=48, max_objs=12, num_ids=5000, size=64, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n_frames, 3, size, size, generator=g)
        self.targets = torch.zeros(n_frames, max_objs, 6)
        for i in range(n_frames):
            k = int(torch.randint(3, max_objs + 1, (1,), generator=g))
            centers = torch.rand(k, 2, generator=g) * 0.8 + 0.1
            wh = torch.rand(k, 2, generator=g) * 0.15 + 0.05
            ids = torch.randint(1, num_ids, (k,), generator=g).float()
            self.targets[i, :k] = torch.cat([torch.zeros(k, 1), centers, wh, ids[:, None]], dim=1)

    def __len__(self):
        return self.images.shape[0]

    def __getitem__(self, i):
        return self.images[i], self.targets[i]


class JDEModel(nn.Module):
    def __init__(self, num_ids, emb_dim=64):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.SiLU(),
        )
        self.box_head = nn.Conv2d(64, 2, 1)
        self.emb_head = nn.Conv2d(64, emb_dim, 1)
        self.id_classifier = nn.Linear(emb_dim, num_ids)

    def forward(self, images, centers):
        feats = self.backbone(images)
        grid = (centers * 2 - 1).unsqueeze(2)
        wh = F.grid_sample(self.box_head(feats), grid.to(feats.dtype), align_corners=False).squeeze(-1)
        emb = F.grid_sample(self.emb_head(feats), grid.to(feats.dtype), align_corners=False).squeeze(-1)
        emb = F.normalize(emb.transpose(1, 2), dim=-1)
        return wh.transpose(1, 2).sigmoid(), self.id_classifier(emb * 16.0)


class MOTTrainer:
    def __init__(self, model, device, lr=1e-3):
        self.device = device
        self.amp = device.type == "cuda"
        self.data_type = torch.float16 if self.amp else torch.float32
        self.model = model.to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)

    def preprocess(self, images, targets):
        images = images.to(self.device, non_blocking=True).to(self.data_type)
        targets = targets.to(self.device, non_blocking=True).to(self.data_type)  # expect: any
        return images, targets

    def compute_loss(self, pred_wh, id_logits, targets):
        valid = targets[..., 3] > 0
        track_ids = torch.where(valid, targets[..., 5].long(), torch.full_like(valid, -100, dtype=torch.long))
        id_loss = F.cross_entropy(id_logits.flatten(0, 1).float(), track_ids.flatten(), ignore_index=-100)
        l1 = (pred_wh.float() - targets[..., 3:5].float()).abs().sum(-1)
        box_loss = (l1 * valid).sum() / valid.sum().clamp(min=1)
        return id_loss + 5.0 * box_loss

    def train_epoch(self, loader):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for images, targets in loader:
            images, targets = self.preprocess(images, targets)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.amp):
                pred_wh, id_logits = self.model(images, targets[..., 1:3])
            loss = self.compute_loss(pred_wh, id_logits, targets)
            self.optimizer.zero_grad(set_to_none=True)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            total += loss.detach()
        return (total / len(loader)).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = DataLoader(SyntheticMOT(), batch_size=8, shuffle=True, pin_memory=device.type == "cuda")
    trainer = MOTTrainer(JDEModel(num_ids=5000), device)
    for epoch in range(2):
        print(f"epoch {epoch}: loss {trainer.train_epoch(loader):.4f}")


if __name__ == "__main__":
    main()
