# source: https://github.com/ModelTC/LightX2V/pull/1150
# area: porting & distributed
# bug: the CUDA platform binds each process to cuda:<global rank>, so on the second node of a multi-node launch the index exceeds the local GPU count (invalid device ordinal)
import os

import torch
import torch.distributed as dist
import torch.nn as nn


class CpuPlatform:
    name = "cpu"

    @staticmethod
    def is_available():
        return True

    @staticmethod
    def init_parallel_env():
        dist.init_process_group(backend="gloo")

    @staticmethod
    def get_device():
        return torch.device("cpu")


class CudaPlatform:
    name = "cuda"

    @staticmethod
    def is_available():
        return torch.cuda.is_available()

    @staticmethod
    def init_parallel_env():
        dist.init_process_group(backend="nccl")
        torch.cuda.set_device(dist.get_rank())  # expect: any

    @staticmethod
    def get_device():
        return torch.device("cuda", torch.cuda.current_device())


PLATFORMS = [CudaPlatform, CpuPlatform]


def select_platform():
    for platform in PLATFORMS:
        if platform.is_available():
            return platform
    raise RuntimeError("no usable platform")


class LatentDenoiser(nn.Module):
    def __init__(self, channels=8, hidden=64):
        super().__init__()
        self.time_embed = nn.Sequential(nn.Linear(1, hidden), nn.SiLU(), nn.Linear(hidden, channels))
        self.body = nn.Sequential(
            nn.Conv3d(channels, hidden, 3, padding=1),
            nn.SiLU(),
            nn.Conv3d(hidden, channels, 3, padding=1),
        )

    def forward(self, latents, t):
        bias = self.time_embed(t.view(-1, 1)).view(latents.shape[0], -1, 1, 1, 1)
        return self.body(latents + bias)


class VideoPipeline:
    def __init__(self, num_frames=8, height=16, width=16, steps=6):
        self.platform = select_platform()
        self.parallel = "RANK" in os.environ and dist.is_available()
        if self.parallel:
            self.platform.init_parallel_env()
        self.device = self.platform.get_device()
        self.rank = dist.get_rank() if self.parallel else 0
        self.world = dist.get_world_size() if self.parallel else 1
        self.num_frames, self.height, self.width, self.steps = num_frames, height, width, steps
        torch.manual_seed(0)
        self.model = LatentDenoiser().to(self.device).eval()

    def frame_slice(self):
        per_rank = self.num_frames // self.world
        return slice(self.rank * per_rank, (self.rank + 1) * per_rank)

    @torch.inference_mode()
    def __call__(self, seed=1234):
        gen = torch.Generator(device="cpu").manual_seed(seed)
        full = torch.randn(1, 8, self.num_frames, self.height, self.width, generator=gen)
        latents = full[:, :, self.frame_slice()].to(self.device)
        timesteps = torch.linspace(1.0, 0.0, self.steps, device=self.device)
        for i in range(self.steps - 1):
            t, t_next = timesteps[i], timesteps[i + 1]
            eps = self.model(latents, t.expand(1))
            latents = latents + (t_next - t) * eps
        if self.parallel:
            chunks = [torch.empty_like(latents) for _ in range(self.world)]
            dist.all_gather(chunks, latents.contiguous())
            latents = torch.cat(chunks, dim=2)
        return latents.float().cpu()


def main():
    pipe = VideoPipeline()
    video = pipe()
    if pipe.rank == 0:
        print(f"platform={pipe.platform.name} video latents {tuple(video.shape)} std={video.std():.4f}")
    if pipe.parallel:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
