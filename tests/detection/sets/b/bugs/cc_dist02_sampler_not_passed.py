# source: https://github.com/PatrickHua/SimSiam/issues/16
# area: porting & distributed
# bug: build_loaders creates a DistributedSampler but the training DataLoader is built with shuffle=True and never given sampler=, so every rank iterates the full dataset and an "epoch" is world_size epochs
import os
import socket
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def init_distributed():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device(f"cuda:{local_rank}")
    return torch.device("cpu")


class SiameseEncoder(nn.Module):
    def __init__(self, d=24, proj=16):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d, 32), nn.BatchNorm1d(32), nn.ReLU())
        self.projector = nn.Linear(32, proj)
        self.predictor = nn.Sequential(nn.Linear(proj, 8), nn.ReLU(), nn.Linear(8, proj))

    def forward(self, x1, x2):
        z1, z2 = self.projector(self.backbone(x1)), self.projector(self.backbone(x2))
        p1, p2 = self.predictor(z1), self.predictor(z2)
        return -(F.cosine_similarity(p1, z2.detach()).mean() + F.cosine_similarity(p2, z1.detach()).mean()) / 2


def build_loaders(dataset, batch_size):
    train_sampler = DistributedSampler(dataset, shuffle=True)  # expect[sampler]: any
    train_loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)  # expect[sampler]: any
    return train_loader, train_sampler


def main():
    torch.manual_seed(0)
    device = init_distributed()
    data = TensorDataset(torch.randn(128, 24))
    loader, sampler = build_loaders(data, batch_size=16)
    model = SiameseEncoder().to(device)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for (x,) in loader:
            x = x.to(device)
            loss = model(x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} steps {len(loader)} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
