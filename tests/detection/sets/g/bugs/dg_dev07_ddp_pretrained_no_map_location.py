# source: https://github.com/NVIDIA/apex/issues/222
# area: device placement
# bug: torch.load without map_location materialises the rank-0-saved weights on cuda:0 in every process, piling memory and contexts onto GPU 0
import os
import random
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def init_distributed():
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(20000 + random.randint(0, 20000)))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    dist.init_process_group(backend=backend)
    return device, dist.get_rank(), dist.get_world_size()


class SegHead(nn.Module):
    def __init__(self, in_ch=3, width=16, n_classes=4):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(in_ch, width, 3, padding=1), nn.ReLU(),
                                     nn.Conv2d(width, width, 3, padding=1), nn.ReLU())
        self.classifier = nn.Conv2d(width, n_classes, 1)

    def forward(self, x):
        return self.classifier(self.encoder(x))


def load_pretrained(model, path):
    state = torch.load(path)  # expect: any
    missing, unexpected = model.load_state_dict(state["model"], strict=False)
    return len(missing), len(unexpected)


def main():
    device, rank, world = init_distributed()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "pretrained.pt")
        if rank == 0:
            torch.save({"model": SegHead().to(device).state_dict()}, ckpt)
        dist.barrier()

        model = SegHead().to(device)
        n_missing, n_unexpected = load_pretrained(model, ckpt)
        if rank == 0:
            print(f"loaded pretrained weights (missing={n_missing}, unexpected={n_unexpected})")
        ddp_model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
        opt = torch.optim.SGD(ddp_model.parameters(), lr=0.05, momentum=0.9)

        g = torch.Generator().manual_seed(rank)
        images = torch.randn(32, 3, 24, 24, generator=g)
        masks = (images[:, 0] > 0).long() + (images[:, 1] > 0).long()
        for epoch in range(2):
            total = torch.zeros((), device=device)
            for i in range(0, 32, 8):
                x, y = images[i:i + 8].to(device), masks[i:i + 8].to(device)
                loss = F.cross_entropy(ddp_model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.detach()
            dist.all_reduce(total)
            if rank == 0:
                print(f"epoch {epoch}: loss {(total / (4 * world)).item():.4f}")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
