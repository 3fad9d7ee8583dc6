# source: https://github.com/NVIDIA/apex/issues/756
# area: device placement
# bug: every rank calls torch.load() on a checkpoint saved from cuda:0 without map_location, so all ranks deserialize the full state onto GPU 0 (extra contexts / OOM on GPU 0) even after torch.cuda.set_device(local_rank)
import os
import shutil
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def setup_distributed():
    if "RANK" in os.environ and dist.is_available():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
        return dist.get_rank(), dist.get_world_size(), local_rank
    return 0, 1, 0


class TextCNN(nn.Module):
    def __init__(self, vocab=1000, dim=64, n_classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.convs = nn.ModuleList(nn.Conv1d(dim, 32, k, padding=k // 2) for k in (3, 5))
        self.out = nn.Linear(64, n_classes)

    def forward(self, tokens):
        h = self.emb(tokens).transpose(1, 2)
        pooled = [F.relu(c(h)).amax(dim=2) for c in self.convs]
        return self.out(torch.cat(pooled, dim=1))


class Trainer:
    def __init__(self, ckpt_path, rank, world_size, local_rank):
        self.rank, self.world_size = rank, world_size
        if torch.cuda.is_available():
            self.device = torch.device("cuda", local_rank)
        else:
            self.device = torch.device("cpu")
        self.ckpt_path = ckpt_path
        self.model = TextCNN().to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.epoch = 0
        if os.path.exists(ckpt_path):
            self.load_checkpoint()
        if world_size > 1:
            ids = [local_rank] if self.device.type == "cuda" else None
            self.model = nn.parallel.DistributedDataParallel(self.model, device_ids=ids)

    def load_checkpoint(self):
        checkpoint = torch.load(self.ckpt_path)  # expect: any
        self.model.load_state_dict(checkpoint["model"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.epoch = checkpoint["epoch"] + 1

    def save_checkpoint(self):
        if self.rank != 0:
            return
        model = self.model.module if hasattr(self.model, "module") else self.model
        torch.save({"model": model.state_dict(), "optimizer": self.optimizer.state_dict(),
                    "epoch": self.epoch}, self.ckpt_path)

    def train_epoch(self, steps=8, batch_size=32):
        total = torch.zeros((), device=self.device)
        for _ in range(steps):
            tokens = torch.randint(0, 1000, (batch_size, 40), device=self.device)
            labels = tokens[:, 0] % 4
            loss = F.cross_entropy(self.model(tokens), labels)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
        if self.rank == 0:
            print(f"epoch {self.epoch} loss {(total / steps).item():.4f}")
        self.save_checkpoint()
        self.epoch += 1


def main():
    torch.manual_seed(0)
    rank, world_size, local_rank = setup_distributed()
    run_id = os.environ.get("TORCHELASTIC_RUN_ID", str(os.getpid()))
    run_dir = os.path.join(tempfile.gettempdir(), f"textcnn_{run_id}")
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, "snapshot.pt")
    Trainer(path, rank, world_size, local_rank).train_epoch()
    if world_size > 1:
        dist.barrier()
    resumed = Trainer(path, rank, world_size, local_rank)
    resumed.train_epoch()
    if world_size > 1:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
