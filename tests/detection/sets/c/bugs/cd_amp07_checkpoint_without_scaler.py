# source: https://github.com/ultralytics/ultralytics/pull/22189
# area: AMP
# bug: checkpoints save model/optimizer/epoch but not the GradScaler state, so on a GPU a resumed run restarts from the default 65536 loss scale instead of the calibrated one and skips/perturbs updates after resume
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class BoxRegressor(nn.Module):
    def __init__(self, n_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.SiLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.SiLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.box = nn.Linear(32, 4)
        self.cls = nn.Linear(32, n_classes)

    def forward(self, x):
        f = self.backbone(x)
        return self.box(f).sigmoid(), self.cls(f)


class Trainer:
    def __init__(self, save_dir, epochs=4, device=None):
        self.device = device or torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.amp = self.device.type == "cuda"
        self.save_dir = save_dir
        self.epochs = epochs
        self.start_epoch = 0
        self.model = BoxRegressor().to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.937, nesterov=True)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.amp)
        g = torch.Generator().manual_seed(1)
        self.images = torch.rand(48, 3, 32, 32, generator=g)
        self.boxes = torch.rand(48, 4, generator=g)
        self.labels = torch.randint(0, 5, (48,), generator=g)

    @property
    def last(self):
        return os.path.join(self.save_dir, "last.pt")

    def save_model(self, epoch):
        ckpt = {"epoch": epoch, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict()}  # expect[w]: any
        torch.save(ckpt, self.last)

    def resume(self):
        ckpt = torch.load(self.last, map_location=self.device)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])  # expect[w]: any
        self.start_epoch = ckpt["epoch"] + 1

    def train_epoch(self):
        self.model.train()
        tloss = torch.zeros(2, device=self.device)
        for i in range(0, len(self.images), 16):
            imgs = self.images[i:i + 16].to(self.device)
            boxes, labels = self.boxes[i:i + 16].to(self.device), self.labels[i:i + 16].to(self.device)
            with torch.autocast(device_type=self.device.type, enabled=self.amp):
                pred_box, logits = self.model(imgs)
                lbox = F.smooth_l1_loss(pred_box.float(), boxes)
                lcls = F.cross_entropy(logits.float(), labels)
            self.scaler.scale(lbox + lcls).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad(set_to_none=True)
            tloss += torch.stack([lbox.detach(), lcls.detach()])
        return tloss

    def train(self, stop_after=None):
        for epoch in range(self.start_epoch, self.epochs):
            tloss = self.train_epoch()
            self.save_model(epoch)
            print(f"epoch {epoch}: box={tloss[0].item():.3f} cls={tloss[1].item():.3f}")
            if stop_after is not None and epoch == stop_after:
                return


if __name__ == "__main__":
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        Trainer(d).train(stop_after=1)
        resumed = Trainer(d)
        resumed.resume()
        resumed.train()
