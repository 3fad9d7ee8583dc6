# source: https://github.com/pytorch/ignite/issues/750
# area: porting & distributed
# bug: the checkpoint handler saves state_dict() of the DDP wrapper, so under torchrun every key gets a "module." prefix and loading it into the bare model for inference fails with unexpected/missing keys
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class KeypointRegressor(nn.Module):
    def __init__(self, n_points=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(4), nn.Flatten(),
        )
        self.head = nn.Linear(32 * 16, n_points * 2)

    def forward(self, x):
        return self.head(self.features(x))


class ModelCheckpoint:
    """Keeps the checkpoint with the lowest validation score."""

    def __init__(self, dirname, model, is_main):
        self.path = os.path.join(dirname, "best_model.pt")
        self.model = model
        self.is_main = is_main
        self.best = float("inf")

    def __call__(self, epoch, score):
        if score >= self.best:
            return
        self.best = score
        if self.is_main:
            torch.save({"epoch": epoch, "score": score, "state_dict": self.model.state_dict()}, self.path)  # expect: any


def load_for_inference(path, device):
    ckpt = torch.load(path, map_location=device)
    model = KeypointRegressor().to(device)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


def synthetic_faces(n, seed):
    g = torch.Generator().manual_seed(seed)
    imgs = torch.rand(n, 1, 32, 32, generator=g)
    targets = imgs[:, 0, ::8, ::8].reshape(n, -1)[:, :8] * 2 - 1
    return TensorDataset(imgs, targets)


def run(workdir):
    distributed = "RANK" in os.environ and dist.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if distributed:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    is_main = not distributed or dist.get_rank() == 0

    train_ds, val_ds = synthetic_faces(256, 0), synthetic_faces(64, 1)
    sampler = DistributedSampler(train_ds) if distributed else None
    train_loader = DataLoader(train_ds, batch_size=32, sampler=sampler, shuffle=sampler is None)
    val_loader = DataLoader(val_ds, batch_size=64)

    model = KeypointRegressor().to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    checkpoint = ModelCheckpoint(workdir, model, is_main)

    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.smooth_l1_loss(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            err = sum(nn.functional.l1_loss(model(x.to(device)), y.to(device), reduction="sum") for x, y in val_loader)
        checkpoint(epoch, err.item() / len(val_ds))

    if distributed:
        dist.barrier()
    if is_main:
        predictor = load_for_inference(checkpoint.path, device)
        with torch.no_grad():
            print("best score", round(checkpoint.best, 4), "pred shape", tuple(predictor(val_ds.tensors[0][:2].to(device)).shape))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as d:
        run(d)
