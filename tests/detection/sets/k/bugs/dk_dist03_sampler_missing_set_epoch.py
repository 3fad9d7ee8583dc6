# source: https://github.com/pytorch/pytorch/issues/11324
# area: porting & distributed
# bug: the DistributedSampler is never told the epoch (no set_epoch), so every epoch on every GPU replays the identical "shuffled" order
import os
import socket

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

N_MELS = 20
FRAMES = 32
KEYWORDS = ["yes", "no", "up", "down", "stop"]


class KeywordClips(Dataset):
    """Synthetic log-mel clips; each keyword has its own spectral bump."""

    def __init__(self, n_clips=200, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, len(KEYWORDS), (n_clips,), generator=g)
        noise = torch.randn(n_clips, 1, N_MELS, FRAMES, generator=g) * 0.3
        bumps = torch.zeros_like(noise)
        for i, lab in enumerate(self.labels.tolist()):
            bumps[i, 0, 3 * lab:3 * lab + 3, :] = 1.0
        self.feats = noise + bumps

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return self.feats[idx], self.labels[idx]


class KWSNet(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32, n_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


def launch_env():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
        os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if use_cuda else "gloo")
    return torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")


def build_loader(dataset, batch_size, device):
    sampler = DistributedSampler(dataset, shuffle=True, seed=17)  # expect[e]: any
    loader = DataLoader(dataset, batch_size=batch_size, sampler=sampler,
                        pin_memory=device.type == "cuda", drop_last=True)
    return loader, sampler


def main(epochs=3, batch_size=25):
    device = launch_env()
    loader, sampler = build_loader(KeywordClips(), batch_size, device)
    model = DDP(KWSNet(len(KEYWORDS)).to(device))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * len(loader))
    for epoch in range(epochs):  # expect[e]: any
        model.train()
        total = torch.zeros((), device=device)
        for feats, labels in loader:
            feats = feats.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = F.cross_entropy(model(feats), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += loss.detach()
        dist.all_reduce(total)
        if dist.get_rank() == 0:
            avg = total.item() / (len(loader) * dist.get_world_size())
            print(f"epoch {epoch}: loss {avg:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
