# source: https://github.com/ethnhe/FFB6D/issues/4
# area: porting & distributed
# bug: the network wraps its RGB backbone in nn.DataParallel whenever several GPUs are visible; inside a torchrun/DDP worker on cuda:2 DataParallel demands its params on cuda:0 and crashes
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class RGBDFrames(Dataset):
    def __init__(self, n=64, size=24, n_kps=8):
        g = torch.Generator().manual_seed(5)
        self.rgb = torch.rand(n, 3, size, size, generator=g)
        self.depth = torch.rand(n, 1, size, size, generator=g)
        self.kps = torch.randn(n, n_kps, 3, generator=g)

    def __len__(self):
        return self.rgb.shape[0]

    def __getitem__(self, i):
        return self.rgb[i], self.depth[i], self.kps[i]


def conv_block(cin, cout, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class FusionPoseNet(nn.Module):
    def __init__(self, n_kps=8):
        super().__init__()
        self.n_kps = n_kps
        self.rgb_backbone = nn.Sequential(conv_block(3, 32, 2), conv_block(32, 64, 2))
        if torch.cuda.device_count() > 1:
            self.rgb_backbone = nn.DataParallel(self.rgb_backbone)  # expect: any
        self.depth_branch = nn.Sequential(conv_block(1, 32, 2), conv_block(32, 64, 2))
        self.fuse = conv_block(128, 64)
        self.kp_head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, n_kps * 3))

    def forward(self, rgb, depth):
        feat = torch.cat([self.rgb_backbone(rgb), self.depth_branch(depth)], dim=1)
        return self.kp_head(self.fuse(feat)).view(-1, self.n_kps, 3)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=1e-3)
    return parser.parse_args()


def main():
    args = parse_args()
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")

    model = FusionPoseNet().to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    dataset = RGBDFrames()
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=args.batch, shuffle=sampler is None, sampler=sampler, drop_last=True)

    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        total = torch.zeros((), device=device)
        for rgb, depth, kps in loader:
            rgb, depth, kps = rgb.to(device), depth.to(device), kps.to(device)
            loss = nn.functional.smooth_l1_loss(model(rgb, depth), kps)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        if not distributed or dist.get_rank() == 0:
            print(f"epoch {epoch}: kp loss {(total / len(loader)).item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
