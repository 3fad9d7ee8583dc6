# source: https://github.com/Project-MONAI/MONAI/issues/4659
# area: porting & distributed
# bug: validation runs only on rank 0, but DiceMeter.aggregate() issues an all_reduce, so with more than one GPU rank 0 waits forever for peers that never join
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class DiceMeter:
    """Accumulates soft-dice numerators/denominators and syncs them across ranks."""

    def __init__(self, device, eps=1e-5):
        self.device, self.eps = device, eps
        self.reset()

    def reset(self):
        self.inter = torch.zeros((), device=self.device)
        self.denom = torch.zeros((), device=self.device)

    def update(self, probs, target):
        self.inter += (probs * target).sum()
        self.denom += probs.sum() + target.sum()

    def aggregate(self):
        buf = torch.stack([self.inter, self.denom])
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(buf)  # expect[r]: any
        return (2 * buf[0] + self.eps) / (buf[1] + self.eps)


class MiniUNet(nn.Module):
    def __init__(self, ch=8):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(1, ch, 3, padding=1), nn.GroupNorm(2, ch), nn.ReLU())
        self.mid = nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU())
        self.out = nn.Conv2d(2 * ch, 1, 1)

    def forward(self, x):
        d = self.down(x)
        m = F.interpolate(self.mid(F.max_pool2d(d, 2)), scale_factor=2.0)
        return self.out(torch.cat([d, m], dim=1))


def blobs(n, size, gen):
    img = torch.randn(n, 1, size, size, generator=gen, device=gen.device) * 0.5
    mask = (img.cumsum(dim=3) > 0.5).float()
    return img + mask, mask


def init():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    lr = int(os.environ["LOCAL_RANK"])
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(lr)
    dist.init_process_group("nccl" if cuda else "gloo")
    return torch.device("cuda", lr) if cuda else torch.device("cpu")


@torch.no_grad()
def validate(net, val_batches, meter):
    net.eval()
    meter.reset()
    for img, mask in val_batches:
        meter.update(torch.sigmoid(net(img)), mask)
    return meter.aggregate()


def main(epochs=3, steps=6):
    device = init()
    gen = torch.Generator(device=device).manual_seed(dist.get_rank())
    model = DDP(MiniUNet().to(device))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    val_gen = torch.Generator(device=device).manual_seed(99)
    val_batches = [blobs(4, 32, val_gen) for _ in range(3)]
    meter = DiceMeter(device)
    for epoch in range(epochs):
        model.train()
        for _ in range(steps):
            img, mask = blobs(8, 32, gen)
            loss = F.binary_cross_entropy_with_logits(model(img), mask)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:  # expect[r]: any
            dice = validate(model.module, val_batches, meter)
            print(f"epoch {epoch} val dice {dice.item():.4f}")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
