# source: https://github.com/NVIDIA/physicsnemo/pull/1747
# area: porting & distributed
# bug: the Welford merge builds its (count, mean, M2) tensors on the CPU and all_gathers them, which the NCCL backend chosen on GPU machines rejects
import os
import tempfile

import torch
import torch.distributed as dist


def init_dist(tmpdir):
    use_nccl = torch.cuda.is_available()
    backend = "nccl" if use_nccl else "gloo"
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if use_nccl:
        torch.cuda.set_device(local_rank)
    if "RANK" in os.environ:
        dist.init_process_group(backend)
    else:
        dist.init_process_group(backend, init_method=f"file://{tmpdir}/rdzv", rank=0, world_size=1)
    return torch.device("cuda", local_rank) if use_nccl else torch.device("cpu")


class Welford:
    """Streaming mean / variance of a scalar feature."""

    def __init__(self):
        self.count = 0
        self.mean = 0.0
        self.M2 = 0.0

    def update(self, values: torch.Tensor):
        v = values.detach().double().flatten()
        n_b = v.numel()
        if n_b == 0:
            return
        mean_b = v.mean().item()
        m2_b = ((v - mean_b) ** 2).sum().item()
        delta = mean_b - self.mean
        total = self.count + n_b
        self.mean += delta * n_b / total
        self.M2 += m2_b + delta * delta * self.count * n_b / total
        self.count = total

    def all_reduce(self):
        if not (dist.is_available() and dist.is_initialized()):
            return
        triple = torch.tensor([self.count, self.mean, self.M2], dtype=torch.float64)  # expect: any
        gathered = [torch.empty_like(triple) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, triple)
        merged = Welford()
        for n, mu, m2 in torch.stack(gathered).tolist():
            if n == 0:
                continue
            delta = mu - merged.mean
            total = merged.count + n
            merged.mean += delta * n / total
            merged.M2 += m2 + delta * delta * merged.count * n / total
            merged.count = total
        self.count, self.mean, self.M2 = merged.count, merged.mean, merged.M2

    @property
    def std(self):
        return (self.M2 / max(self.count - 1, 1)) ** 0.5


def shard_files(rank, world, n_files=12):
    for i in range(rank, n_files, world):
        g = torch.Generator().manual_seed(i)
        yield {"delay": torch.rand(500, generator=g) * 3.0, "coord": torch.randn(500, 3, generator=g)}


def main():
    with tempfile.TemporaryDirectory() as tmp:
        init_dist(tmp)
        rank, world = dist.get_rank(), dist.get_world_size()
        stats = {"delay": Welford(), "log_delay": Welford(), "coord": Welford()}
        for sample in shard_files(rank, world):
            delay = sample["delay"]
            stats["delay"].update(delay)
            stats["log_delay"].update(torch.log1p(delay))
            stats["coord"].update(sample["coord"])
        for s in stats.values():
            s.all_reduce()
        if rank == 0:
            for k, s in stats.items():
                print(f"{k:10s} n={int(s.count)} mean={s.mean:.4f} std={s.std:.4f}")
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
