# source: https://github.com/pytorch/pytorch/issues/31771
# area: porting & distributed
# bug: the DistributedSampler shuffles with seed+epoch, but sampler.set_epoch(epoch) is never called in the epoch loop, so every epoch sees the same order on every rank
import os
import socket
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup():
    if "RANK" not in os.environ:  # plain `python train.py`: one-process group
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank), local_rank
    return torch.device("cpu"), local_rank


class IndexedDataset(Dataset):
    def __init__(self, n=64):
        self.x = torch.randn(n, 8)
        self.y = self.x.sum(dim=1, keepdim=True)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return i, self.x[i], self.y[i]


def main():
    torch.manual_seed(0)
    device, local_rank = setup()
    dataset = IndexedDataset()
    sampler = DistributedSampler(dataset, shuffle=True)  # expect[epoch]: any
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    ddp = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for epoch in range(3):  # expect[epoch]: any
        first_batch = None
        for idx, x, y in loader:
            if first_batch is None:
                first_batch = idx.tolist()
            loss = nn.functional.mse_loss(ddp(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            print(f"epoch {epoch} first batch {first_batch} loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
