# twin of: bugs/cc_dist04_ckpt_saved_every_rank.py
# area: porting & distributed
# correct: only global rank 0 writes the checkpoint and the other ranks wait at a barrier before reading it
import os
import socket
import tempfile
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def init_dist():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def save_checkpoint(model, optimizer, epoch, out_dir):
    state = {"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict()}
    path = os.path.join(out_dir, "checkpoint.pth")
    torch.save(state, path)
    return path


def train(out_dir):
    torch.manual_seed(0)
    device = init_dist()
    dataset = TensorDataset(torch.randn(80, 6), torch.randn(80, 2))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=10, sampler=sampler)
    model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 2)).to(device)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.smooth_l1_loss(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        path = os.path.join(out_dir, "checkpoint.pth")
        if dist.get_rank() == 0:
            save_checkpoint(model, optimizer, epoch, out_dir)
    dist.barrier()
    ckpt = torch.load(path, map_location="cpu")
    if dist.get_rank() == 0:
        print("saved epoch", ckpt["epoch"], "keys", sorted(ckpt["model"])[:2])
    dist.destroy_process_group()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        train(os.environ.get("CKPT_DIR", tmp))
