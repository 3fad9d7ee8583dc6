# source: https://github.com/bytedance/ibot/issues/15
# area: porting & distributed
# bug: the best-checkpoint callback calls torch.save on every rank, so all processes write the same file concurrently and can corrupt it
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed():
    if "RANK" not in os.environ:  # plain `python train.py`: a world of one
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class BestCheckpoint:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.best = float("inf")

    def on_epoch_end(self, epoch, model, optimizer, val_loss):
        if val_loss < self.best:
            self.best = val_loss
            state = {"epoch": epoch, "model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "val_loss": val_loss}
            torch.save(state, os.path.join(self.out_dir, "checkpoint_best.pth"))  # expect: any


@torch.no_grad()
def validate(model, loader, device):
    model.eval()
    total = torch.zeros(2, device=device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        total[0] += nn.functional.cross_entropy(model(x), y, reduction="sum")
        total[1] += y.numel()
    dist.all_reduce(total)
    return (total[0] / total[1]).item()


def main():
    torch.manual_seed(0)
    device = init_distributed()
    x = torch.randn(192, 10)
    y = (x[:, :3].sum(1) > 0).long()
    train_ds, val_ds = TensorDataset(x[:160], y[:160]), TensorDataset(x[160:], y[160:])
    train_sampler = DistributedSampler(train_ds)
    train_loader = DataLoader(train_ds, batch_size=16, sampler=train_sampler)
    val_loader = DataLoader(val_ds, batch_size=16, sampler=DistributedSampler(val_ds, shuffle=False))
    model = DDP(nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2)).to(device))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    with tempfile.TemporaryDirectory() as out_dir:
        ckpt = BestCheckpoint(out_dir)
        for epoch in range(3):
            train_sampler.set_epoch(epoch)
            model.train()
            for xb, yb in train_loader:
                loss = nn.functional.cross_entropy(model(xb.to(device)), yb.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()
            val_loss = validate(model, val_loader, device)
            ckpt.on_epoch_end(epoch, model, opt, val_loss)
            if dist.get_rank() == 0:
                print(f"epoch {epoch}: val loss {val_loss:.4f} (best {ckpt.best:.4f})")
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
