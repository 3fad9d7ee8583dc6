# source: https://github.com/Azure/MS-AMP/pull/45
# area: AMP
# bug: the Trainer's optimizer-step hook calls scaler.step(optimizer) but never scaler.update(), so on the GPU the next accumulation boundary fails ("unscale_() is being called after step()") and the loss scale is never adjusted
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class SequenceDataset(Dataset):
    def __init__(self, n=64, seq_len=12, vocab=40):
        self.data = torch.randint(1, vocab, (n, seq_len + 1))

    def __len__(self):
        return len(self.data)

    def __getitem__(self, idx):
        row = self.data[idx]
        return {"input_ids": row[:-1], "labels": row[1:]}


class TinyLM(nn.Module):
    def __init__(self, vocab=40, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, input_ids, labels=None):
        h, _ = self.rnn(self.emb(input_ids))
        logits = self.lm_head(h)
        loss = None if labels is None else F.cross_entropy(logits.flatten(0, 1), labels.flatten())
        return logits, loss


class Trainer:
    def __init__(self, model, train_ds, lr=3e-3, batch_size=8, grad_accum_steps=2, max_grad_norm=1.0):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.loader = DataLoader(train_ds, batch_size=batch_size, shuffle=True)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.use_amp = self.device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.grad_accum_steps = grad_accum_steps
        self.max_grad_norm = max_grad_norm
        self.global_step = 0

    def _optimizer_step(self):
        self.scaler.unscale_(self.optimizer)
        nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.scaler.step(self.optimizer)  # expect: any
        self.optimizer.zero_grad(set_to_none=True)
        self.global_step += 1

    def train(self, epochs=2):
        self.model.train()
        for epoch in range(epochs):
            for step, batch in enumerate(self.loader):
                batch = {k: v.to(self.device) for k, v in batch.items()}
                with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
                    _, loss = self.model(**batch)
                    loss = loss / self.grad_accum_steps
                self.scaler.scale(loss).backward()
                if (step + 1) % self.grad_accum_steps == 0:
                    self._optimizer_step()
            print(f"epoch {epoch}: last loss {loss.item() * self.grad_accum_steps:.4f}, steps {self.global_step}")


if __name__ == "__main__":
    trainer = Trainer(TinyLM(), SequenceDataset())
    trainer.train()
