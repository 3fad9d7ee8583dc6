# twin of: bugs/dl_sync07_kge_unpinned_loader.py
# area: transfer & sync
# correct: the loader pins batches whenever CUDA is present, so the non_blocking=True copies are real asynchronous transfers
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


@dataclass
class TrainingLoopConfig:
    batch_size: int = 512
    num_epochs: int = 4
    lr: float = 0.01
    num_negs_per_pos: int = 4
    num_workers: int = 2
    pin_memory: bool = torch.cuda.is_available()


class TriplesFactory(Dataset):
    def __init__(self, num_entities=2000, num_relations=20, num_triples=10000, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.num_entities = num_entities
        self.num_relations = num_relations
        h = torch.randint(0, num_entities, (num_triples,), generator=g)
        r = torch.randint(0, num_relations, (num_triples,), generator=g)
        t = (h * 7 + r * 13) % num_entities
        self.mapped_triples = torch.stack([h, r, t], dim=1)

    def __len__(self):
        return self.mapped_triples.size(0)

    def __getitem__(self, idx):
        return self.mapped_triples[idx]


class TransE(nn.Module):
    def __init__(self, num_entities, num_relations, dim=50, p=1):
        super().__init__()
        self.ent = nn.Embedding(num_entities, dim)
        self.rel = nn.Embedding(num_relations, dim)
        nn.init.xavier_uniform_(self.ent.weight)
        nn.init.xavier_uniform_(self.rel.weight)
        self.p = p

    def score_hrt(self, hrt):
        h, r, t = self.ent(hrt[:, 0]), self.rel(hrt[:, 1]), self.ent(hrt[:, 2])
        return -torch.norm(h + r - t, p=self.p, dim=-1)


def corrupt_tails(pos, num_entities, k):
    neg = pos.repeat_interleave(k, dim=0)
    neg[:, 2] = torch.randint(0, num_entities, (neg.size(0),), device=pos.device)
    return neg


class SLCWATrainingLoop:
    def __init__(self, model, triples, config, device):
        self.model = model.to(device)
        self.triples = triples
        self.config = config
        self.device = device
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self._loader = None

    def _create_loader(self):
        if self._loader is not None:
            return self._loader
        self._loader = DataLoader(
            self.triples,
            batch_size=self.config.batch_size,
            shuffle=True,
            num_workers=self.config.num_workers,
            pin_memory=self.config.pin_memory,
            persistent_workers=self.config.num_workers > 0,
        )
        return self._loader

    def train(self):
        epoch_losses = []
        for _ in range(self.config.num_epochs):
            total = torch.zeros((), device=self.device)
            for batch in self._create_loader():
                batch = batch.to(self.device, non_blocking=True)
                neg = corrupt_tails(batch, self.triples.num_entities, self.config.num_negs_per_pos)
                pos_s = self.model.score_hrt(batch).repeat_interleave(self.config.num_negs_per_pos)
                loss = F.margin_ranking_loss(pos_s, self.model.score_hrt(neg), torch.ones_like(pos_s), margin=1.0)
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                self.optimizer.step()
                total += loss.detach()
            epoch_losses.append(total)
        return torch.stack(epoch_losses).tolist()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    triples = TriplesFactory()
    model = TransE(triples.num_entities, triples.num_relations)
    losses = SLCWATrainingLoop(model, triples, TrainingLoopConfig(), device).train()
    print("epoch losses:", [round(x, 2) for x in losses])


if __name__ == "__main__":
    main()
