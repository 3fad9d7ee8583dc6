# twin of: bugs/do_dist06_pretrained_no_map_location.py
# area: porting & distributed
# correct: the pretrained checkpoint is mapped to the CPU first and copied into the model, which is then moved to its own rank's device
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None if stride == 1 and cin == cout else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        identity = x if self.down is None else self.down(x)
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + identity)


class MiniResNet(nn.Module):
    def __init__(self, pretrained=None):
        super().__init__()
        self.pretrained = pretrained
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layer1 = BasicBlock(16, 32, 2)
        self.layer2 = BasicBlock(32, 64, 2)

    def init_weights(self):
        if isinstance(self.pretrained, str):
            checkpoint = torch.load(self.pretrained, map_location="cpu")
            missing, unexpected = self.load_state_dict(checkpoint["state_dict"], strict=False)
            return len(missing) + len(unexpected)
        return 0

    def forward(self, x):
        return self.layer2(self.layer1(self.stem(x)))


class EncoderDecoder(nn.Module):
    def __init__(self, num_classes=3, pretrained=None):
        super().__init__()
        self.backbone = MiniResNet(pretrained)
        self.decode_head = nn.Conv2d(64, num_classes, 1)

    def forward(self, img):
        logits = self.decode_head(self.backbone(img))
        return F.interpolate(logits, size=img.shape[-2:], mode="bilinear", align_corners=False)


def publish_pretrained(path, device):
    """Stands in for the model-zoo checkpoint produced by the pretraining job."""
    backbone = MiniResNet().to(device)
    torch.save({"state_dict": backbone.state_dict(), "meta": {"arch": "mini_resnet", "epoch": 90}}, path)


def main(workdir):
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}") if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank() if distributed else 0
    if distributed:
        shared = [workdir]
        dist.broadcast_object_list(shared, src=0)
        workdir = shared[0]

    ckpt_path = os.path.join(workdir, "mini_resnet_imagenet.pth")
    if rank == 0:
        publish_pretrained(ckpt_path, device)
    if distributed:
        dist.barrier()

    model = EncoderDecoder(pretrained=ckpt_path)
    mismatched = model.backbone.init_weights()
    model = model.to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    g = torch.Generator().manual_seed(rank)
    imgs = torch.randn(8, 3, 32, 32, generator=g)
    masks = (imgs[:, 0] > 0).long() + (imgs[:, 1] > 0.5).long()
    imgs, masks = imgs.to(device), masks.to(device)
    for _ in range(5):
        loss = F.cross_entropy(model(imgs), masks)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if rank == 0:
        print(f"mismatched keys {mismatched}, final loss {loss.item():.4f}")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        main(d)
