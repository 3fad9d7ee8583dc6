# source: https://github.com/dice-group/dice-embeddings/issues/12
# area: dtype
# bug: the KGE model ends in sigmoid and is trained with nn.BCELoss; autocast is only enabled on CUDA, where binary_cross_entropy refuses to run on fp16 inputs
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class DistMult(nn.Module):
    def __init__(self, num_entities, num_relations, dim=64, dropout=0.1):
        super().__init__()
        self.entity = nn.Embedding(num_entities, dim)
        self.relation = nn.Embedding(num_relations, dim)
        self.dropout = nn.Dropout(dropout)
        nn.init.xavier_normal_(self.entity.weight)
        nn.init.xavier_normal_(self.relation.weight)

    def forward(self, head, rel):
        query = self.dropout(self.entity(head) * self.relation(rel))
        scores = query @ self.entity.weight.t()
        return torch.sigmoid(scores)  # expect[bce]: any


def synthetic_kg(num_entities=400, num_relations=12, num_triples=3000, seed=0):
    g = torch.Generator().manual_seed(seed)
    heads = torch.randint(0, num_entities, (num_triples,), generator=g)
    rels = torch.randint(0, num_relations, (num_triples,), generator=g)
    tails = (heads * 7 + rels * 13) % num_entities
    return heads, rels, tails


def one_to_n_targets(heads, rels, tails, num_entities, label_smoothing=0.1):
    targets = torch.zeros(heads.shape[0], num_entities)
    targets[torch.arange(heads.shape[0]), tails] = 1.0
    return (1.0 - label_smoothing) * targets + label_smoothing / num_entities


class KGETrainer:
    def __init__(self, model, device, lr=1e-2):
        self.model = model.to(device)
        self.device = device
        self.use_amp = device.type == "cuda"
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.loss_fn = nn.BCELoss()  # expect[bce]: any

    def train_epoch(self, loader):
        self.model.train()
        total = torch.zeros((), device=self.device)
        for head, rel, target in loader:
            head = head.to(self.device, non_blocking=True)
            rel = rel.to(self.device, non_blocking=True)
            target = target.to(self.device, non_blocking=True)
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
                probs = self.model(head, rel)
                loss = self.loss_fn(probs, target)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            total += loss.detach()
        return (total / len(loader)).item()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    num_entities, num_relations = 400, 12
    heads, rels, tails = synthetic_kg(num_entities, num_relations)
    targets = one_to_n_targets(heads, rels, tails, num_entities)
    loader = DataLoader(TensorDataset(heads, rels, targets), batch_size=128, shuffle=True,
                        pin_memory=device.type == "cuda")
    trainer = KGETrainer(DistMult(num_entities, num_relations), device)
    for epoch in range(3):
        print(f"epoch {epoch}: loss {trainer.train_epoch(loader):.4f}")


if __name__ == "__main__":
    main()
