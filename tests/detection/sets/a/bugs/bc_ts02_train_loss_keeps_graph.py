# source: https://github.com/pai4451/ML2021/issues/2
# area: transfer & sync
# bug: train_loss += outputs["loss"] accumulates the un-detached loss, so every step's autograd history stays alive for the whole epoch
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ToyQADataset(Dataset):
    def __init__(self, n=192, seq_len=24, vocab=100):
        self.ids = torch.randint(1, vocab, (n, seq_len))
        self.start = torch.randint(0, seq_len, (n,))
        self.end = torch.clamp(self.start + torch.randint(0, 4, (n,)), max=seq_len - 1)

    def __len__(self):
        return self.ids.size(0)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "start_positions": self.start[i], "end_positions": self.end[i]}


class SpanModel(nn.Module):
    def __init__(self, vocab=100, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.enc = nn.GRU(dim, dim, batch_first=True)
        self.qa_outputs = nn.Linear(dim, 2)

    def forward(self, input_ids, start_positions=None, end_positions=None):
        h, _ = self.enc(self.emb(input_ids))
        start_logits, end_logits = self.qa_outputs(h).unbind(-1)
        out = {"start_logits": start_logits, "end_logits": end_logits}
        if start_positions is not None:
            ce = nn.functional.cross_entropy
            out["loss"] = (ce(start_logits, start_positions) + ce(end_logits, end_positions)) / 2
        return out


def train(model, loader, optimizer, epochs=2):
    for epoch in range(epochs):
        model.train()
        train_loss = 0.0
        for step, batch in enumerate(loader):
            batch = {k: v.to(device) for k, v in batch.items()}
            outputs = model(**batch)
            loss = outputs["loss"]
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            train_loss += loss  # expect: any
        print(f"epoch {epoch}: mean loss {train_loss.item() / (step + 1):.4f}")


if __name__ == "__main__":
    model = SpanModel().to(device)
    loader = DataLoader(ToyQADataset(), batch_size=16, shuffle=True)
    train(model, loader, torch.optim.AdamW(model.parameters(), lr=3e-3))
