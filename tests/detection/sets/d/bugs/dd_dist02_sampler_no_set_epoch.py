# source: https://github.com/lucidrains/DALLE-pytorch/pull/230
# area: porting & distributed
# bug: the DistributedSampler is never given set_epoch, so every epoch on every GPU replays the same shuffled order
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class TrainConfig:
    epochs: int = 3
    batch_size: int = 16
    lr: float = 3e-4
    num_tokens: int = 32
    codebook_dim: int = 16
    image_size: int = 16


class SyntheticImages(Dataset):
    def __init__(self, n=128, size=16, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.images = torch.rand(n, 3, size, size, generator=g)

    def __len__(self):
        return self.images.size(0)

    def __getitem__(self, idx):
        return self.images[idx]


class TinyDiscreteVAE(nn.Module):
    def __init__(self, cfg: TrainConfig):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 32, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, cfg.num_tokens, 1),
        )
        self.codebook = nn.Embedding(cfg.num_tokens, cfg.codebook_dim)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(cfg.codebook_dim, 32, 4, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 3, 1),
        )

    def forward(self, images, temperature=1.0):
        logits = self.encoder(images)
        soft_one_hot = F.gumbel_softmax(logits, tau=temperature, dim=1)
        sampled = torch.einsum("bnhw,nd->bdhw", soft_one_hot, self.codebook.weight)
        recon = self.decoder(sampled)
        return F.mse_loss(recon, images)


def setup():
    if "RANK" in os.environ:
        local_rank = int(os.environ["LOCAL_RANK"])
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
        return dist.get_rank(), dist.get_world_size(), device
    return 0, 1, torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    cfg = TrainConfig()
    rank, world_size, device = setup()
    torch.manual_seed(0)

    dataset = SyntheticImages(size=cfg.image_size)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank) if world_size > 1 else None  # expect[e]: any
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler,
                        shuffle=sampler is None, drop_last=True)

    vae = TinyDiscreteVAE(cfg).to(device)
    if dist.is_initialized():
        vae = nn.parallel.DistributedDataParallel(
            vae, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.Adam(vae.parameters(), lr=cfg.lr)

    for epoch in range(cfg.epochs):  # expect[e]: any
        vae.train()
        total = torch.zeros((), device=device)
        for images in loader:
            images = images.to(device)
            loss = vae(images, temperature=max(0.5, 1.0 - 0.1 * epoch))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach()
        if rank == 0:
            print(f"epoch {epoch}: mean loss {(total / len(loader)).item():.4f}")

    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
