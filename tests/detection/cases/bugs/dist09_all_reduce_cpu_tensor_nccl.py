# source: https://github.com/pytorch/ignite/pull/849
# area: porting & distributed
# bug: a metric tensor built on the CPU is all_reduce'd with the NCCL backend, which needs GPU tensors
import tempfile

import torch
import torch.distributed as dist
from torch import nn


def main():
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(
        backend, init_method=f"file://{tempfile.mkdtemp()}/store", rank=0, world_size=1
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        torch.cuda.set_device(0)
    model = nn.Linear(4, 2).to(device)
    with torch.no_grad():
        correct = (model(torch.randn(8, 4, device=device)).argmax(1) == 0).sum()
    stats = torch.tensor([float(correct), 8.0])
    dist.all_reduce(stats)  # expect: any
    print("accuracy", (stats[0] / stats[1]).item())
    dist.destroy_process_group()


main()
