# source: https://github.com/open-mmlab/mmaction2/pull/2254
# area: porting & distributed
# bug: pretrained checkpoint is torch.load-ed without map_location, so every rank deserializes it onto cuda:0
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class TinyBackbone3D(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.stem = nn.Conv3d(3, width, kernel_size=(3, 5, 5), padding=(1, 2, 2))
        self.block = nn.Conv3d(width, width, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm3d(width)

    def forward(self, clip):
        x = F.relu(self.stem(clip))
        x = F.relu(self.bn(self.block(x)))
        return x.mean(dim=(2, 3, 4))


class Recognizer(nn.Module):
    def __init__(self, num_classes=7, width=16):
        super().__init__()
        self.backbone = TinyBackbone3D(width)
        self.cls_head = nn.Linear(width, num_classes)

    def init_weights(self, pretrained=None):
        if pretrained is not None:
            state = load_checkpoint(pretrained)
            missing, unexpected = self.backbone.load_state_dict(state, strict=False)
            if missing or unexpected:
                print("partial load:", missing, unexpected)

    def forward(self, clip):
        return self.cls_head(self.backbone(clip))


def load_checkpoint(filename):
    checkpoint = torch.load(filename)  # expect: any
    if isinstance(checkpoint, dict) and "state_dict" in checkpoint:
        checkpoint = checkpoint["state_dict"]
    return {k.replace("backbone.", ""): v for k, v in checkpoint.items()}


def setup():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29611")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), device


def main():
    rank, device = setup()
    work_dir = tempfile.mkdtemp(prefix="recognizer_")
    ckpt_path = os.path.join(work_dir, "backbone_pretrained.pth")
    if rank == 0:
        pretrain = TinyBackbone3D().to(device)
        torch.save({"state_dict": pretrain.state_dict()}, ckpt_path)
    dist.barrier()

    model = Recognizer()
    model.init_weights(pretrained=ckpt_path)
    model.to(device)
    ddp = nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)

    clips = torch.randn(8, 3, 4, 16, 16)
    labels = torch.randint(0, 7, (8,))
    x, y = clips.to(device), labels.to(device)
    for _ in range(3):
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if rank == 0:
        print("final loss", loss.item())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
