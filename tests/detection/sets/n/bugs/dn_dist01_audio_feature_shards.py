# source: https://github.com/hkchengrex/MMAudio/pull/57
# area: porting & distributed
# bug: under torchrun every rank picks torch.device("cuda") (= cuda:0), so all shards run on the first GPU instead of cuda:LOCAL_RANK
import os
import tempfile
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, Subset


@dataclass
class ExtractConfig:
    num_clips: int = 48
    clip_len: int = 3200
    n_mels: int = 32
    latent_dim: int = 16
    batch_size: int = 8
    out_dir: str = ""


class SyntheticClips(Dataset):
    def __init__(self, n, length):
        g = torch.Generator().manual_seed(0)
        self.wavs = torch.randn(n, length, generator=g) * 0.1

    def __len__(self):
        return self.wavs.shape[0]

    def __getitem__(self, idx):
        return idx, self.wavs[idx]


class MelLatentEncoder(nn.Module):
    def __init__(self, n_mels, latent_dim, hop=160):
        super().__init__()
        self.frontend = nn.Conv1d(1, n_mels, kernel_size=400, stride=hop)
        self.proj = nn.Sequential(
            nn.Conv1d(n_mels, 64, 3, padding=1), nn.GELU(), nn.Conv1d(64, latent_dim, 1)
        )

    def forward(self, wav):
        spec = self.frontend(wav.unsqueeze(1)).abs().clamp_min(1e-5).log()
        return self.proj(spec)


def init_dist():
    if "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend)
        return dist.get_rank(), int(os.environ["LOCAL_RANK"]), dist.get_world_size()
    return 0, 0, 1


def setup_device(local_rank):
    if torch.cuda.is_available():
        return torch.device("cuda")  # expect: any
    return torch.device("cpu")


@torch.inference_mode()
def extract_shard(cfg, rank, world_size, device):
    dataset = SyntheticClips(cfg.num_clips, cfg.clip_len)
    shard = Subset(dataset, list(range(rank, len(dataset), world_size)))
    loader = DataLoader(shard, batch_size=cfg.batch_size, shuffle=False)

    encoder = MelLatentEncoder(cfg.n_mels, cfg.latent_dim).to(device).eval()
    ids, latents = [], []
    for idx, wav in loader:
        wav = wav.to(device)
        latents.append(encoder(wav))
        ids.append(idx)

    result = {"ids": torch.cat(ids), "latents": torch.cat(latents).cpu()}
    path = os.path.join(cfg.out_dir, f"latents_rank{rank:02d}.pt")
    torch.save(result, path)
    return path, result["latents"].shape


def main():
    rank, local_rank, world_size = init_dist()
    device = setup_device(local_rank)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = ExtractConfig(out_dir=tmp)
        path, shape = extract_shard(cfg, rank, world_size, device)
        if world_size > 1:
            dist.barrier()
        if rank == 0:
            print(f"wrote {os.path.basename(path)} with latents {tuple(shape)} on {device}")
    if world_size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
