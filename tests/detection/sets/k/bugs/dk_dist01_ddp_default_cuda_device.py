# source: https://github.com/pytorch/pytorch/issues/133761
# area: porting & distributed
# bug: under torchrun every rank picks the bare "cuda" device (cuda:0) and never calls set_device, so all processes pile onto GPU 0
import os
import socket
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


@dataclass
class TrainConfig:
    vocab_size: int = 500
    embed_dim: int = 32
    num_classes: int = 4
    seq_len: int = 24
    num_docs: int = 256
    batch_size: int = 32
    epochs: int = 2
    lr: float = 5e-3


class SyntheticDocs(Dataset):
    def __init__(self, cfg, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.tokens = torch.randint(0, cfg.vocab_size, (cfg.num_docs, cfg.seq_len), generator=g)
        self.labels = self.tokens[:, 0] % cfg.num_classes

    def __len__(self):
        return self.tokens.size(0)

    def __getitem__(self, idx):
        return self.tokens[idx], self.labels[idx]


class BagClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.EmbeddingBag(cfg.vocab_size, cfg.embed_dim, mode="mean")
        self.head = nn.Linear(cfg.embed_dim, cfg.num_classes)

    def forward(self, tokens):
        return self.head(self.embed(tokens))


def setup_distributed():
    if "RANK" not in os.environ:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                          RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # expect: any
    return local_rank, device


def train_epoch(model, loader, optimizer, device):
    model.train()
    running = torch.zeros((), device=device)
    for tokens, labels in loader:
        tokens = tokens.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        loss = F.cross_entropy(model(tokens), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    dist.all_reduce(running)
    return running / (len(loader) * dist.get_world_size())


def main():
    cfg = TrainConfig()
    local_rank, device = setup_distributed()
    dataset = SyntheticDocs(cfg)
    sampler = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler,
                        pin_memory=device.type == "cuda")
    model = BagClassifier(cfg).to(device)
    model = DDP(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        sampler.set_epoch(epoch)
        mean_loss = train_epoch(model, loader, optimizer, device)
        if dist.get_rank() == 0:
            print(f"epoch {epoch} local_rank {local_rank} loss {mean_loss.item():.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
