# source: https://github.com/pytorch/pytorch/issues/4412
# area: device placement
# bug: the per-task heads live in a plain dict, so model.to(device) never moves them (nor does the optimizer see them) and they meet GPU features on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F

TASKS = {"sentiment": 3, "topic": 5, "toxicity": 2}


class TextEncoder(nn.Module):
    def __init__(self, vocab_size, dim):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim))

    def forward(self, tokens, offsets):
        return self.proj(self.embed(tokens, offsets))


class MultiTaskClassifier(nn.Module):
    def __init__(self, vocab_size, dim, tasks):
        super().__init__()
        self.encoder = TextEncoder(vocab_size, dim)
        self.heads = {name: nn.Linear(dim, n) for name, n in tasks.items()}  # expect: any

    def forward(self, tokens, offsets, task):
        return self.heads[task](self.encoder(tokens, offsets))


def collate(samples):
    lengths = torch.tensor([len(s[0]) for s in samples])
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    tokens = torch.cat([s[0] for s in samples])
    labels = torch.tensor([s[1] for s in samples])
    return tokens, offsets, labels


def make_task_batches(task, n_classes, vocab_size, n_batches=4, bs=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(n_batches):
        samples = []
        for _ in range(bs):
            length = int(torch.randint(5, 30, (1,), generator=g))
            samples.append((torch.randint(0, vocab_size, (length,), generator=g),
                            int(torch.randint(0, n_classes, (1,), generator=g))))
        batches.append(collate(samples))
    return batches


def train(model, data, device, epochs=2):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        totals = {t: torch.zeros((), device=device) for t in data}
        for task, batches in data.items():
            for tokens, offsets, labels in batches:
                tokens, offsets, labels = tokens.to(device), offsets.to(device), labels.to(device)
                loss = F.cross_entropy(model(tokens, offsets, task), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                totals[task] += loss.detach()
        print(f"epoch {epoch}:", {t: round(v.item() / len(data[t]), 4) for t, v in totals.items()})


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    vocab_size = 500
    model = MultiTaskClassifier(vocab_size, 64, TASKS).to(device)
    data = {t: make_task_batches(t, n, vocab_size, seed=i) for i, (t, n) in enumerate(TASKS.items())}
    train(model, data, device)


if __name__ == "__main__":
    main()
