# source: https://github.com/open-mmlab/mmdetection/issues/11417
# area: transfer & sync
# bug: the data preprocessor issues non_blocking host-to-device copies but the loader config leaves pin_memory off, so batches come from pageable memory and the copies cannot overlap with compute
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

train_dataloader = dict(
    batch_size=8,
    num_workers=2,
    persistent_workers=True,
    pin_memory=False,  # expect[w]: any
    shuffle=True,
)


class ToyDetectionDataset(Dataset):
    def __init__(self, n=64, size=64, max_boxes=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, 3, size, size, generator=g)
        xy = torch.rand(n, max_boxes, 2, generator=g) * (size - 16)
        wh = 8 + torch.rand(n, max_boxes, 2, generator=g) * 8
        self.boxes = torch.cat([xy, xy + wh], dim=-1)
        self.labels = torch.randint(0, 3, (n, max_boxes), generator=g)

    def __len__(self):
        return self.images.shape[0]

    def __getitem__(self, i):
        return {"inputs": self.images[i], "gt_bboxes": self.boxes[i], "gt_labels": self.labels[i]}


class DetDataPreprocessor(nn.Module):
    def __init__(self, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225)):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1))

    def cast_data(self, data):
        device = self.mean.device
        return {k: v.to(device, non_blocking=True) for k, v in data.items()}  # expect[w]: any

    def forward(self, data):
        data = self.cast_data(data)
        data["inputs"] = (data["inputs"] - self.mean) / self.std
        return data


class TinyDetector(nn.Module):
    def __init__(self, n_classes=3, max_boxes=4):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.max_boxes = max_boxes
        self.n_classes = n_classes
        self.box_head = nn.Linear(32, max_boxes * 4)
        self.cls_head = nn.Linear(32, max_boxes * n_classes)

    def loss(self, data):
        feats = self.backbone(data["inputs"])
        boxes = self.box_head(feats).view(-1, self.max_boxes, 4)
        logits = self.cls_head(feats).view(-1, self.max_boxes, self.n_classes)
        l_box = nn.functional.smooth_l1_loss(boxes, data["gt_bboxes"] / 64.0)
        l_cls = nn.functional.cross_entropy(logits.flatten(0, 1), data["gt_labels"].flatten())
        return {"loss_bbox": l_box, "loss_cls": l_cls}


def run(max_iters=16):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(ToyDetectionDataset(), **train_dataloader)
    preprocessor = DetDataPreprocessor().to(device)
    model = TinyDetector().to(device)
    optim = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    log_total = torch.zeros((), device=device)
    it = 0
    while it < max_iters:
        for batch in loader:
            losses = model.loss(preprocessor(batch))
            total = sum(losses.values())
            optim.zero_grad()
            total.backward()
            optim.step()
            log_total += total.detach()
            it += 1
            if it >= max_iters:
                break
    print(f"iters {it}, mean loss {(log_total / it).item():.4f}")


if __name__ == "__main__":
    run()
