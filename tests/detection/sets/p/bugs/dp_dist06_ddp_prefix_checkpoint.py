# source: https://github.com/instanseg/instanseg/issues/74
# area: porting & distributed
# bug: the multi-GPU run saves the DDP wrapper's state_dict ("module." keys) and the prefix-stripping helper never strips them once the process group is gone, so reloading for inference fails
import os
import tempfile
from collections import OrderedDict

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class PixelEmbedder(nn.Module):
    def __init__(self, in_ch=3, dim=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(in_ch, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.ReLU(),
                                     nn.Conv2d(16, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.ReLU())
        self.embed = nn.Conv2d(16, dim, 1)
        self.seed = nn.Conv2d(16, 1, 1)

    def forward(self, x):
        h = self.encoder(x)
        return self.embed(h), self.seed(h)


def remove_module_prefix_from_dict(state_dict):
    cleaned = OrderedDict()
    for key, value in state_dict.items():
        if dist.is_initialized() and key.startswith("module."):  # expect[p]: any
            key = key[len("module."):]
        cleaned[key] = value
    return cleaned


def synthetic_batch(device, n=4, size=32):
    imgs = torch.rand(n, 3, size, size, device=device)
    masks = (imgs.mean(1, keepdim=True) > 0.5).float()
    return imgs, masks


def train(out_path, device, distributed, steps=20):
    model = PixelEmbedder().to(device)
    if distributed:
        model = DDP(model, device_ids=[device] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        imgs, masks = synthetic_batch(device)
        emb, seed = model(imgs)
        loss = F.binary_cross_entropy_with_logits(seed, masks) + 1e-3 * emb.pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if not distributed or dist.get_rank() == 0:
        torch.save({"model_state_dict": model.state_dict(), "dim": 8}, out_path)  # expect[p]: any
    if distributed:
        dist.barrier()


def load_for_inference(path, device):
    ckpt = torch.load(path, map_location=device)
    model = PixelEmbedder(dim=ckpt["dim"]).to(device)
    model.load_state_dict(remove_module_prefix_from_dict(ckpt["model_state_dict"]))
    return model.eval()


@torch.no_grad()
def predict(model, device):
    imgs, _ = synthetic_batch(device, n=2)
    emb, seed = model(imgs)
    return emb.shape, torch.sigmoid(seed).mean()


def main():
    distributed = "RANK" in os.environ and dist.is_available()
    if distributed:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    rank = dist.get_rank() if distributed else 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(os.environ.get("EXPERIMENT_DIR", tmp), "instance_model.pth")
        train(path, device, distributed)
        if distributed:
            dist.destroy_process_group()
        if rank == 0:
            shape, fg = predict(load_for_inference(path, device), device)
            print(f"embedding map {tuple(shape)}, mean foreground prob {fg.item():.3f}")


if __name__ == "__main__":
    main()
