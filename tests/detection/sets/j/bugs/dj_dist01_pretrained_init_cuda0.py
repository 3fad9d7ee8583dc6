# source: https://github.com/open-mmlab/mmengine/pull/665
# area: porting & distributed
# bug: the pretrained-init helper maps the checkpoint to "cuda:0", so under torchrun every rank deserializes a full copy onto GPU 0 (extra contexts / OOM on GPU 0)
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

_CKPT_DEVICE = "cuda:0" if torch.cuda.is_available() else "cpu"  # expect[w]: any


@dataclass
class PretrainedInitCfg:
    checkpoint: str
    prefix: str = "backbone."
    map_location: str = _CKPT_DEVICE


class PretrainedInit:
    """Copies weights stored under `prefix` in a checkpoint into a sub-module."""

    def __init__(self, cfg: PretrainedInitCfg):
        self.cfg = cfg

    def __call__(self, module: nn.Module) -> None:
        blob = torch.load(self.cfg.checkpoint, map_location=self.cfg.map_location)  # expect[w]: any
        state = blob.get("state_dict", blob)
        n = len(self.cfg.prefix)
        picked = {k[n:]: v for k, v in state.items() if k.startswith(self.cfg.prefix)}
        missing, unexpected = module.load_state_dict(picked, strict=False)
        if missing:
            print(f"[init] missing keys: {missing}")


class Backbone(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())
        self.block = nn.Sequential(nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU())

    def forward(self, x):
        return self.block(self.stem(x))


class Segmenter(nn.Module):
    def __init__(self, num_classes=5, width=32):
        super().__init__()
        self.backbone = Backbone(width)
        self.head = nn.Conv2d(width, num_classes, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


def write_fake_pretrained(path):
    donor = Segmenter()
    torch.save({"state_dict": donor.state_dict(), "meta": {"epoch": 90}}, path)


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    if distributed:
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        device = torch.device("cuda", local_rank)
    else:
        local_rank = 0
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    with tempfile.TemporaryDirectory() as tmp:
        ckpt = os.path.join(tmp, "imagenet_backbone.pth")
        write_fake_pretrained(ckpt)
        model = Segmenter()
        PretrainedInit(PretrainedInitCfg(checkpoint=ckpt))(model.backbone)

    model = model.to(device)
    if distributed:
        model = DDP(model, device_ids=[local_rank])

    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    crit = nn.CrossEntropyLoss()
    running = torch.zeros((), device=device)
    for step in range(6):
        x = torch.randn(4, 3, 16, 16, device=device)
        y = torch.randint(0, 5, (4, 16, 16), device=device)
        loss = crit(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running += loss.detach()
    print(f"mean loss {(running / 6).item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
