# twin of: bugs/dist15_ddp_checkpoint_module_keys.py
# area: porting & distributed
# correct: the checkpoint holds the wrapped network's own state_dict (model.module), whose keys load into the bare model
import os
import socket
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def setup():
    if "RANK" not in os.environ:  # plain `python FILE`: a world of one
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


class TextDetector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 2, 1)

    def forward(self, x):
        return self.head(self.backbone(x))


def main():
    device = setup()
    torch.manual_seed(0)
    images = torch.rand(32, 3, 16, 16)
    ds = TensorDataset(images, (images.mean(1) > 0.5).long())
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    model = TextDetector().to(device)
    model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    out_dir = tempfile.mkdtemp()
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            state = {"epoch": epoch, "state_dict": model.module.state_dict()}
            torch.save(state, os.path.join(out_dir, "checkpoint.pth.tar"))
            print(f"epoch {epoch}: loss {loss.item():.4f}, keys {list(state['state_dict'])[:2]}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
