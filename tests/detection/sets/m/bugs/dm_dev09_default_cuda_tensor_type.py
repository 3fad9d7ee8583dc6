# source: https://github.com/amdegroot/ssd.pytorch/issues/578
# area: device placement
# bug: making CUDA the global default tensor type sends the shuffling sampler's randperm to the GPU while its generator is a CPU one, so iterating the DataLoader fails
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


def str2bool(v):
    return v.lower() in ("yes", "true", "t", "1")


parser = argparse.ArgumentParser(description="Single Shot Detector training (toy)")
parser.add_argument("--cuda", default="True", type=str2bool)
parser.add_argument("--batch_size", default=8, type=int)
parser.add_argument("--num_workers", default=0, type=int)
parser.add_argument("--lr", default=1e-3, type=float)
parser.add_argument("--max_iter", default=12, type=int)
args = parser.parse_args([])

if args.cuda and torch.cuda.is_available():
    torch.set_default_tensor_type("torch.cuda.FloatTensor")  # expect: any
else:
    torch.set_default_tensor_type("torch.FloatTensor")


class ToyDetectionDataset(Dataset):
    def __init__(self, n=64, size=32):
        self.images = torch.rand(n, 3, size, size)
        self.boxes = torch.rand(n, 4).sort(dim=1).values
        self.labels = torch.randint(0, 3, (n,))

    def __len__(self):
        return self.images.size(0)

    def __getitem__(self, idx):
        target = torch.cat([self.boxes[idx], self.labels[idx : idx + 1].float()])
        return self.images[idx], target


def detection_collate(batch):
    imgs = torch.stack([b[0] for b in batch])
    targets = torch.stack([b[1] for b in batch])
    return imgs, targets


class ToySSD(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.base = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.loc = nn.Linear(32, 4)
        self.conf = nn.Linear(32, num_classes)

    def forward(self, x):
        f = self.base(x).flatten(1)
        return self.loc(f), self.conf(f)


def train():
    torch.manual_seed(0)
    dev = torch.device("cuda" if args.cuda and torch.cuda.is_available() else "cpu")
    net = ToySSD().to(dev)
    optimizer = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    data_loader = DataLoader(ToyDetectionDataset(), args.batch_size, num_workers=args.num_workers,
                             shuffle=True, collate_fn=detection_collate)
    batch_iterator = iter(data_loader)
    for iteration in range(args.max_iter):
        try:
            images, targets = next(batch_iterator)
        except StopIteration:
            batch_iterator = iter(data_loader)
            images, targets = next(batch_iterator)
        images, targets = images.to(dev), targets.to(dev)
        loc, conf = net(images)
        loss_l = F.smooth_l1_loss(loc, targets[:, :4])
        loss_c = F.cross_entropy(conf, targets[:, 4].long())
        loss = loss_l + loss_c
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"final loss: {loss.item():.4f}")


if __name__ == "__main__":
    train()
