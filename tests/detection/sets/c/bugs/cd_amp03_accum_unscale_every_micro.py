# source: https://github.com/pytorch/pytorch/pull/36601
# area: AMP
# bug: with gradient accumulation, scaler.unscale_ (and clipping) runs on every micro-batch although step/update only run every N; on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
import torch
import torch.nn as nn
import torch.nn.functional as F


class BagOfWordsClassifier(nn.Module):
    def __init__(self, vocab=2000, dim=64, n_labels=4):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, 128), nn.GELU(), nn.Dropout(0.1), nn.Linear(128, n_labels))

    def forward(self, tokens, offsets):
        return self.mlp(self.embed(tokens, offsets))


def make_batches(n_batches=24, batch=16, vocab=2000, n_labels=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n_batches):
        lengths = torch.randint(5, 30, (batch,), generator=g)
        labels = torch.randint(0, n_labels, (batch,), generator=g)
        tokens = torch.cat([torch.randint(0, vocab // n_labels, (int(l),), generator=g) + lab * (vocab // n_labels)
                            for l, lab in zip(lengths, labels)])
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
        out.append((tokens, offsets, labels))
    return out


class AccumulatingTrainer:
    def __init__(self, model, device, accum_steps=4, max_grad_norm=1.0, lr=5e-3):
        self.model = model.to(device)
        self.device = device
        self.accum_steps = accum_steps
        self.max_grad_norm = max_grad_norm
        self.use_amp = device.type == "cuda"
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.updates = 0

    def micro_step(self, i, tokens, offsets, labels):
        tokens, offsets, labels = (t.to(self.device) for t in (tokens, offsets, labels))
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits = self.model(tokens, offsets)
            loss = F.cross_entropy(logits, labels) / self.accum_steps
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)  # expect: any
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        if (i + 1) % self.accum_steps == 0:
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad(set_to_none=True)
            self.updates += 1
        return loss.detach()

    def fit(self, batches, epochs=2):
        self.model.train()
        for epoch in range(epochs):
            total = torch.zeros((), device=self.device)
            for i, (tokens, offsets, labels) in enumerate(batches):
                total += self.micro_step(i, tokens, offsets, labels)
            print(f"epoch {epoch}: loss {total.item() * self.accum_steps / len(batches):.4f}, updates {self.updates}")


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = AccumulatingTrainer(BagOfWordsClassifier(), device)
    trainer.fit(make_batches())
