# source: https://github.com/Snowdar/asv-subtools/issues/8
# area: porting & distributed
# bug: the DistributedSampler is never given set_epoch(), so on multiple GPUs every epoch replays the same shuffled order and each rank sees the same utterances in the same batches every epoch
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class SyntheticUtterances(Dataset):
    """Fixed-length chunks of 'fbank' features for a handful of speakers."""

    def __init__(self, num_speakers=8, per_speaker=24, frames=100, feat_dim=30, seed=0):
        g = torch.Generator().manual_seed(seed)
        centers = torch.randn(num_speakers, feat_dim, generator=g)
        self.feats, self.labels = [], []
        for spk in range(num_speakers):
            for _ in range(per_speaker):
                noise = torch.randn(frames, feat_dim, generator=g)
                self.feats.append(centers[spk] + 0.8 * noise)
                self.labels.append(spk)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.feats[idx], self.labels[idx]


class TDNN(nn.Module):
    def __init__(self, feat_dim=30, channels=64, embed_dim=32, num_speakers=8):
        super().__init__()
        self.frame = nn.Sequential(
            nn.Conv1d(feat_dim, channels, 5, dilation=1), nn.ReLU(), nn.BatchNorm1d(channels),
            nn.Conv1d(channels, channels, 3, dilation=2), nn.ReLU(), nn.BatchNorm1d(channels),
        )
        self.embed = nn.Linear(2 * channels, embed_dim)
        self.classifier = nn.Linear(embed_dim, num_speakers)

    def forward(self, x):
        h = self.frame(x.transpose(1, 2))
        stats = torch.cat([h.mean(dim=2), h.std(dim=2)], dim=1)
        return self.classifier(F.relu(self.embed(stats)))


class TrainConfig:
    epochs = 4
    batch_size = 16
    lr = 1e-3
    num_workers = 0


def build_loader(dataset, cfg, world_size, rank, use_cuda):
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)  # expect[w]: any
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler,
                        num_workers=cfg.num_workers, pin_memory=use_cuda, drop_last=True)
    return loader, sampler


def main():
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if world_size > 1:
        import torch.distributed as dist
        dist.init_process_group("nccl" if use_cuda else "gloo")
    cfg = TrainConfig()
    dataset = SyntheticUtterances()
    loader, sampler = build_loader(dataset, cfg, world_size, rank, use_cuda)
    model = TDNN().to(device)
    if world_size > 1:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)

    for epoch in range(cfg.epochs):  # expect[w]: any
        model.train()
        loss_sum = torch.zeros((), device=device)
        for feats, labels in loader:
            feats = feats.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = F.cross_entropy(model(feats), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
        if rank == 0:
            print(f"epoch {epoch}: loss {(loss_sum / len(loader)).item():.3f}")


if __name__ == "__main__":
    main()
