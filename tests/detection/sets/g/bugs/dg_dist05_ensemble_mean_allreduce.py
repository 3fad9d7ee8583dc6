# source: https://github.com/NVIDIA/physicsnemo/issues/57
# area: porting & distributed
# bug: the member count is built with torch.as_tensor(shape[0]) on the CPU and then all_reduced over NCCL, which only accepts CUDA tensors
import os
import tempfile

import torch
import torch.distributed as dist


class EnsembleMean:
    """Running mean over ensemble members that may be spread across ranks."""

    def __init__(self, input_shape, device):
        self.device = device
        self.sum = torch.zeros(input_shape, device=device)
        self.n = torch.zeros((), dtype=torch.int64, device=device)

    def _reduce(self, tensor):
        if dist.is_initialized():
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def __call__(self, inputs):
        self.sum = self._reduce(inputs.sum(dim=0))
        self.n = torch.as_tensor(inputs.shape[0])  # expect[count]: any
        self.n = self._reduce(self.n)  # expect[count]: any
        return self.sum / self.n

    def update(self, inputs):
        self.sum += self._reduce(inputs.sum(dim=0))
        self.n += self._reduce(torch.as_tensor(inputs.shape[0], device=self.device))
        return self.sum / self.n

    def finalize(self):
        return self.sum / self.n


def forecast_members(num_members, grid, device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    base = torch.sin(torch.linspace(0, 6.28, grid[0] * grid[1])).reshape(grid)
    noise = torch.randn(num_members, *grid, generator=g) * 0.1
    return (base + noise).to(device)


def init_distributed():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
    backend = "nccl" if device.type == "cuda" else "gloo"
    if "RANK" in os.environ:
        dist.init_process_group(backend)
    else:
        store_file = tempfile.NamedTemporaryFile(delete=False)
        dist.init_process_group(backend, init_method=f"file://{store_file.name}", rank=0, world_size=1)
    return device


def main():
    device = init_distributed()
    rank = dist.get_rank()
    grid = (32, 64)
    metric = EnsembleMean(grid, device)
    members = forecast_members(8, grid, device, seed=rank)
    mean_field = metric(members)
    for step in range(3):
        more = forecast_members(4, grid, device, seed=100 * (step + 1) + rank)
        mean_field = metric.update(more)
    spread = (members - mean_field).pow(2).mean().sqrt()
    if rank == 0:
        print("members seen:", int(metric.n), "rmse vs mean:", float(spread))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
