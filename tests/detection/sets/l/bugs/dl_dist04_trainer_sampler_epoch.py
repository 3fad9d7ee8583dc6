# source: https://github.com/huggingface/transformers/issues/4398
# area: porting & distributed
# bug: the trainer never calls DistributedSampler.set_epoch, so under torchrun every epoch replays the same shuffled order on every rank
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, RandomSampler
from torch.utils.data.distributed import DistributedSampler


class SentimentDataset(Dataset):
    def __init__(self, n=256, seq_len=24, vocab=500, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(1, vocab, (n, seq_len), generator=g)
        self.labels = (self.input_ids[:, :4].sum(dim=1) % 2).long()

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return {"input_ids": self.input_ids[idx], "labels": self.labels[idx]}


class BagOfEmbeddingsClassifier(nn.Module):
    def __init__(self, vocab=500, dim=48, num_labels=2):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.head = nn.Sequential(nn.Linear(dim, dim), nn.Tanh(), nn.Linear(dim, num_labels))

    def forward(self, input_ids, labels=None):
        logits = self.head(self.embed(input_ids))
        loss = nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return loss, logits


class Trainer:
    def __init__(self, model, train_dataset, batch_size=16, epochs=3, lr=3e-4):
        self.local_rank = int(os.environ.get("LOCAL_RANK", "-1"))
        if self.local_rank != -1 and torch.cuda.is_available():
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
        else:
            self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        if self.local_rank != -1:
            self.model = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.local_rank] if self.device.type == "cuda" else None)
        self.train_dataset = train_dataset
        self.batch_size, self.epochs = batch_size, epochs
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)

    def get_train_dataloader(self):
        if self.local_rank == -1:
            sampler = RandomSampler(self.train_dataset)
        else:
            sampler = DistributedSampler(self.train_dataset)
        return DataLoader(self.train_dataset, batch_size=self.batch_size, sampler=sampler)

    def train(self):
        train_dataloader = self.get_train_dataloader()
        self.model.train()
        for epoch in range(self.epochs):  # expect: any
            epoch_loss = torch.zeros((), device=self.device)
            for batch in train_dataloader:
                batch = {k: v.to(self.device) for k, v in batch.items()}
                loss, _ = self.model(**batch)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                epoch_loss += loss.detach()
            if self.local_rank in (-1, 0):
                print(f"epoch {epoch}: loss {(epoch_loss / len(train_dataloader)).item():.4f}")


def main():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29614")
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    os.environ.setdefault("LOCAL_RANK", "0")
    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    trainer = Trainer(BagOfEmbeddingsClassifier(), SentimentDataset())
    trainer.train()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
