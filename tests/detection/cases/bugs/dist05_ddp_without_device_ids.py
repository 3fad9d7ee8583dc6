# source: https://github.com/pytorch/examples/pull/1142
# area: porting & distributed
# bug: DDP wraps a GPU model without device_ids and no torch.cuda.set_device: every rank uses GPU 0
import os
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(
        backend, init_method=f"file://{tempfile.mkdtemp()}/store", rank=0, world_size=1
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(5, 1).to(device)
    ddp = DDP(model)  # expect: TP402
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for _ in range(2):
        loss = ddp(torch.randn(4, 5, device=device)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if int(os.environ.get("RANK", "0")) == 0:
        print("trained")
    dist.destroy_process_group()


main()
