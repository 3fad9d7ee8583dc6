# source: https://blog.youkuaiyun.com/myknotruby/article/details/112635453
# area: porting & distributed
# bug: every DDP rank resumes with torch.load and no map_location, so all ranks deserialize the rank-0 checkpoint onto cuda:0 and pile their copies onto GPU 0
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class TinySegNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.up = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                                nn.Conv2d(32, num_classes, 1))

    def forward(self, x):
        return self.up(self.down(x))


class SegTrainer:
    def __init__(self, device, lr=0.01):
        self.device = device
        self.rank = dist.get_rank() if dist.is_initialized() else 0
        net = TinySegNet().to(device)
        if dist.is_initialized():
            net = nn.parallel.DistributedDataParallel(
                net, device_ids=[device.index] if device.type == "cuda" else None)
        self.model = net
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.start_epoch = 0
        self.g = torch.Generator().manual_seed(100 + self.rank)

    @property
    def bare(self):
        return self.model.module if hasattr(self.model, "module") else self.model

    def train_epoch(self, steps=8):
        self.model.train()
        for _ in range(steps):
            images = torch.rand(4, 3, 16, 16, generator=self.g).to(self.device)
            masks = (images.mean(1) * 3).long().clamp(max=2)
            loss = F.cross_entropy(self.model(images), masks)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        return loss.detach()

    def save_checkpoint(self, path, epoch):
        if self.rank == 0:
            torch.save({"epoch": epoch, "model": self.bare.state_dict(),
                        "optimizer": self.optimizer.state_dict()}, path)
        if dist.is_initialized():
            dist.barrier()

    def resume(self, path):
        checkpoint = torch.load(path)  # expect: any
        self.bare.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.start_epoch = checkpoint["epoch"] + 1


def init_distributed():
    if "RANK" in os.environ:
        local_rank = int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    device = init_distributed()
    torch.manual_seed(0)
    ckpt = os.path.join(tempfile.gettempdir(), "segnet_last.pth")

    first = SegTrainer(device)
    for epoch in range(2):
        first.train_epoch()
        first.save_checkpoint(ckpt, epoch)

    restarted = SegTrainer(device)
    restarted.resume(ckpt)
    for epoch in range(restarted.start_epoch, restarted.start_epoch + 2):
        loss = restarted.train_epoch()
        if restarted.rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")

    if dist.is_initialized():
        dist.barrier()
    if restarted.rank == 0 and os.path.exists(ckpt):
        os.remove(ckpt)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
