# source: https://github.com/NVIDIA/DeepLearningExamples/issues/527
# area: dtype
# bug: box-regression targets are encoded in NumPy float64 and the train step upcasts the predictions to double to match, so the loss and its backward run in float64 on the GPU
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
NUM_ANCHORS = 64
NUM_CLASSES = 5


def make_anchors(n):
    rng = np.random.default_rng(0)
    centers = rng.uniform(0.1, 0.9, size=(n, 2))
    sizes = rng.uniform(0.05, 0.3, size=(n, 2))
    return np.concatenate([centers, sizes], axis=1)


class BoxEncoder:
    def __init__(self, anchors, variances=(0.1, 0.2)):
        self.anchors = anchors
        self.var = variances

    def encode(self, gt_boxes, gt_labels):
        # match every anchor to its closest ground-truth box (by center distance)
        d = ((self.anchors[:, None, :2] - gt_boxes[None, :, :2]) ** 2).sum(-1)
        best = d.argmin(1)
        matched = gt_boxes[best]
        loc = np.zeros((len(self.anchors), 4))
        loc[:, :2] = (matched[:, :2] - self.anchors[:, :2]) / (self.var[0] * self.anchors[:, 2:])
        loc[:, 2:] = np.log(matched[:, 2:] / self.anchors[:, 2:]) / self.var[1]
        labels = gt_labels[best]
        labels[d.min(1) > 0.05] = 0
        return loc, labels


class ToyDetectionSet(Dataset):
    def __init__(self, n, encoder):
        self.n = n
        self.encoder = encoder
        self.rng = np.random.default_rng(1)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image = torch.randn(3, 32, 32)
        k = 3
        boxes = np.concatenate([self.rng.uniform(0.2, 0.8, (k, 2)), self.rng.uniform(0.05, 0.3, (k, 2))], 1)
        labels = self.rng.integers(1, NUM_CLASSES, size=k)
        loc_t, conf_t = self.encoder.encode(boxes, labels)
        return image, torch.from_numpy(loc_t), torch.from_numpy(conf_t).long()  # expect[w]: any


class TinySSD(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(),
        )
        self.loc_head = nn.Linear(32 * 16, NUM_ANCHORS * 4)
        self.conf_head = nn.Linear(32 * 16, NUM_ANCHORS * NUM_CLASSES)

    def forward(self, x):
        f = self.backbone(x)
        return self.loc_head(f).view(-1, NUM_ANCHORS, 4), self.conf_head(f).view(-1, NUM_ANCHORS, NUM_CLASSES)


def multibox_loss(ploc, pconf, gloc, glabel):
    pos = (glabel > 0).unsqueeze(-1)
    loc_loss = (F.smooth_l1_loss(ploc, gloc, reduction="none") * pos).sum() / pos.sum().clamp(min=1)
    conf_loss = F.cross_entropy(pconf.reshape(-1, NUM_CLASSES), glabel.reshape(-1))
    return loc_loss + conf_loss


def train_epoch(model, loader, optimizer):
    model.train()
    total = torch.zeros((), device=device)
    for images, gloc, glabel in loader:
        images, gloc, glabel = images.to(device), gloc.to(device), glabel.to(device)
        ploc, pconf = model(images)
        ploc, pconf = ploc.double(), pconf.double()  # expect[w]: any
        loss = multibox_loss(ploc, pconf, gloc, glabel)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach().float()
    return total / len(loader)


def main():
    torch.manual_seed(0)
    ds = ToyDetectionSet(32, BoxEncoder(make_anchors(NUM_ANCHORS)))
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    model = TinySSD().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    for epoch in range(2):
        avg = train_epoch(model, loader, optimizer)
        print(f"epoch {epoch} loss {avg.item():.4f}")


if __name__ == "__main__":
    main()
