# source: https://github.com/OpenGVLab/efficient-video-recognition/issues/18
# area: porting & distributed
# bug: the periodic checkpoint is written by every DDP rank to the same file, so concurrent torch.save calls race and can leave a corrupted checkpoint
import os
import shutil
import socket
import tempfile
from types import SimpleNamespace

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def init_dist():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                              MASTER_ADDR="127.0.0.1", MASTER_PORT=str(s.getsockname()[1]))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        return torch.device("cuda", local_rank)
    dist.init_process_group("gloo")
    return torch.device("cpu")


class TinyVideoNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Conv3d(3, 16, kernel_size=(3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2))
        self.block = nn.Conv3d(16, 32, kernel_size=3, stride=2, padding=1)
        self.head = nn.Linear(32, num_classes)

    def forward(self, clips):
        x = F.relu(self.stem(clips))
        x = F.relu(self.block(x))
        return self.head(x.mean(dim=(2, 3, 4)))


def synthetic_batch(args, device):
    clips = torch.randn(args.batch_size, 3, args.num_frames, 32, 32, device=device)
    labels = torch.randint(0, args.num_classes, (args.batch_size,), device=device)
    return clips, labels


def train_one_epoch(model, optimizer, args, device):
    model.train()
    running = torch.zeros((), device=device)
    for _ in range(args.iters_per_epoch):
        clips, labels = synthetic_batch(args, device)
        loss = F.cross_entropy(model(clips), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return running / args.iters_per_epoch


def save_checkpoint(model, optimizer, epoch, args):
    path = os.path.join(args.output_dir, f"checkpoint-{epoch + 1}.pth")
    torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
    return path


def main():
    args = SimpleNamespace(num_classes=5, num_frames=8, batch_size=4, iters_per_epoch=2, epochs=2, save_freq=1,
                           output_dir=os.path.join(tempfile.gettempdir(), "evl_k400_run"))
    device = init_dist()
    rank = dist.get_rank()
    os.makedirs(args.output_dir, exist_ok=True)
    model = DDP(TinyVideoNet(args.num_classes).to(device), device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)

    for i in range(args.epochs):
        loss = train_one_epoch(model, optimizer, args, device)
        if (i + 1) % args.save_freq == 0:
            save_checkpoint(model, optimizer, i, args)  # expect: any
        if rank == 0:
            print(f"epoch {i}: loss {loss.item():.4f}")

    dist.barrier()
    if rank == 0:
        shutil.rmtree(args.output_dir, ignore_errors=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
