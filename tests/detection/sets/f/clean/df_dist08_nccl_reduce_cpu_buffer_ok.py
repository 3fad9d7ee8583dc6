# twin of: bugs/df_dist08_nccl_reduce_cpu_buffer.py
# area: porting & distributed
# correct: the running sums and counts live on the process's own device, so the NCCL all_reduce receives CUDA tensors (and no per-batch device-to-host copy is made)
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn


class Distributed:
    _instance = None

    def __init__(self):
        if "RANK" not in os.environ:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                os.environ["MASTER_PORT"] = str(s.getsockname()[1])
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
        self.local_rank = int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available():
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cpu")
        dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
        self.world_size = dist.get_world_size()

    @classmethod
    def get_instance(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def reduce_mean(self, tensor):
        tensor = tensor.clone()
        dist.all_reduce(tensor)
        return tensor / self.world_size


class TimeMeanAggregator:
    """Per-timestep spatial fields averaged over the ensemble/batch dimension."""

    def __init__(self, n_timesteps):
        self._n_timesteps = n_timesteps
        self._sums = None
        self._dist = Distributed.get_instance()
        self._counts = torch.zeros(n_timesteps, dtype=torch.float32, device=self._dist.device)

    @torch.no_grad()
    def record_batch(self, gen, i_time_start):
        if self._sums is None:
            self._sums = {k: torch.zeros((self._n_timesteps, *v.shape[2:]), dtype=torch.float32, device=v.device)
                          for k, v in gen.items()}
        window = next(iter(gen.values())).shape[1]
        sl = slice(i_time_start, i_time_start + window)
        for name, tensor in gen.items():
            self._sums[name][sl] += tensor.mean(dim=0)
        self._counts[sl] += 1

    @torch.no_grad()
    def get_logs(self, label):
        logs = {}
        for name in sorted(self._sums):
            mean = self._sums[name] / self._counts[:, None, None]
            mean = self._dist.reduce_mean(mean)
            logs[f"{label}/time_mean/{name}"] = mean
        return logs


class Stepper(nn.Module):
    def __init__(self, n_vars=2):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(n_vars, 16, 3, padding=1), nn.GELU(), nn.Conv2d(16, n_vars, 3, padding=1))

    def forward(self, x):
        return x + 0.1 * self.net(x)


@torch.no_grad()
def run_inference(n_forward_steps=12, window=4, batch=3, names=("t2m", "u10")):
    d = Distributed.get_instance()
    model = Stepper(len(names)).to(d.device).eval()
    aggregator = TimeMeanAggregator(n_forward_steps)
    state = torch.randn(batch, len(names), 16, 32, device=d.device)
    for start in range(0, n_forward_steps, window):
        frames = []
        for _ in range(window):
            state = model(state)
            frames.append(state)
        stacked = torch.stack(frames, dim=1)
        aggregator.record_batch({n: stacked[:, :, i] for i, n in enumerate(names)}, start)
    logs = aggregator.get_logs("inference")
    if dist.get_rank() == 0:
        for key, field in logs.items():
            print(key, tuple(field.shape))
    dist.destroy_process_group()


if __name__ == "__main__":
    run_inference()
