# twin of: bugs/dist04_unguarded_checkpoint_save.py
# area: porting & distributed
# correct: only rank 0 writes the checkpoint
import os
import tempfile

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    workdir = tempfile.mkdtemp()
    dist.init_process_group(
        "gloo", init_method=f"file://{workdir}/store", rank=0, world_size=1
    )
    model = DDP(nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        loss = model(torch.randn(6, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), os.path.join(workdir, "last.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
