# source: https://github.com/pytorch/pytorch/issues/23138
# area: porting & distributed
# bug: on resume every DDP rank calls torch.load without map_location, so the CUDA tensors saved from rank 0 are all deserialized onto cuda:0, leaving an extra process and wasted memory on GPU 0
import os
import shutil
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class TrainState:
    def __init__(self, device, local_rank, lr=0.05):
        net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
        self.device = device
        self.model = DDP(net, device_ids=[local_rank] if device.type == "cuda" else None)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.epoch = 0

    def state_dict(self):
        return {"epoch": self.epoch, "model": self.model.module.state_dict(),
                "optimizer": self.optimizer.state_dict()}

    def load(self, path):
        checkpoint = torch.load(path)  # expect: any
        self.model.module.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.epoch = checkpoint["epoch"]


def setup():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device, local_rank


def run_epoch(state, steps=5, batch=32):
    state.model.train()
    for _ in range(steps):
        x = torch.randn(batch, 64, device=state.device)
        y = torch.randint(0, 10, (batch,), device=state.device)
        loss = nn.functional.cross_entropy(state.model(x), y)
        state.optimizer.zero_grad()
        loss.backward()
        state.optimizer.step()
    state.epoch += 1
    return loss.detach()


def main():
    device, local_rank = setup()
    ckpt_dir = os.path.join(tempfile.gettempdir(), f"run_{os.environ['MASTER_PORT']}")
    os.makedirs(ckpt_dir, exist_ok=True)
    path = os.path.join(ckpt_dir, "checkpoint.pth")

    state = TrainState(device, local_rank)
    run_epoch(state)
    if dist.get_rank() == 0:
        torch.save(state.state_dict(), path)
    dist.barrier()

    resumed = TrainState(device, local_rank)
    if os.path.isfile(path):
        resumed.load(path)
    loss = run_epoch(resumed)
    dist.barrier()
    if dist.get_rank() == 0:
        print(f"resumed at epoch {resumed.epoch - 1}, loss {loss.item():.4f}")
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
