# source: https://github.com/pytorch/pytorch/issues/138829
# area: dtype
# bug: the metric takes torch.dot of int64 n-gram count vectors from bincount; the CPU accepts int64 dot but CUDA does not ("dot" not implemented for 'Long')
import torch
import torch.nn as nn


class NgramCosineSimilarity:
    """Cheap lexical-overlap metric for generated token sequences."""

    def __init__(self, n=2, num_buckets=2048, device="cpu"):
        self.n = n
        self.num_buckets = num_buckets
        self.device = torch.device(device)
        self.multipliers = torch.tensor([1000003 ** i for i in range(n)], device=self.device) % (2 ** 31 - 1)
        self.reset()

    def reset(self):
        self.total = torch.zeros((), dtype=torch.float64, device=self.device)
        self.count = torch.zeros((), dtype=torch.long, device=self.device)

    def _counts(self, ids):
        grams = ids.unfold(0, self.n, 1)
        buckets = (grams * self.multipliers).sum(-1) % self.num_buckets
        return torch.bincount(buckets, minlength=self.num_buckets)

    def _cosine(self, a, b):
        num = torch.dot(a, b)  # expect: any
        den = torch.sqrt(a.pow(2).sum().double() * b.pow(2).sum().double()).clamp(min=1.0)
        return num.double() / den

    def update(self, preds, targets):
        for p, t in zip(preds, targets):
            p, t = p.to(self.device), t.to(self.device)
            if p.numel() < self.n or t.numel() < self.n:
                continue
            self.total += self._cosine(self._counts(p), self._counts(t))
            self.count += 1

    def compute(self):
        return (self.total / self.count.clamp(min=1)).item()


class TinyCaptioner(nn.Module):
    def __init__(self, vocab=300, dim=48):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    @torch.no_grad()
    def generate(self, prompt, steps=24):
        seq = prompt
        h = None
        x = prompt
        for _ in range(steps):
            o, h = self.rnn(self.emb(x), h)
            x = self.out(o[:, -1:]).argmax(-1)
            seq = torch.cat([seq, x], dim=1)
        return seq


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = TinyCaptioner().to(device).eval()
    metric = NgramCosineSimilarity(device=device)
    for _ in range(3):
        prompts = torch.randint(0, 300, (8, 4), device=device)
        generated = model.generate(prompts)
        references = torch.randint(0, 300, (8, 28), device=device)
        references[:, :4] = prompts
        metric.update(list(generated), list(references))
    print(f"bigram cosine similarity: {metric.compute():.4f}")


if __name__ == "__main__":
    main()
