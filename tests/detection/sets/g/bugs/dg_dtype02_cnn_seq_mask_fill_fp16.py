# source: https://github.com/NVIDIA/apex/issues/93
# area: dtype
# bug: padding scores are filled with -1e15, which does not fit in fp16; under CUDA autocast the scores are Half and masked_fill overflows
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

NEG_FILL = -1e15


class VariableLengthSequences(Dataset):
    def __init__(self, n=96, vocab=50, max_len=24, num_classes=4, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.lengths = torch.randint(6, max_len + 1, (n,), generator=g)
        self.tokens = torch.randint(1, vocab, (n, max_len), generator=g)
        for i, length in enumerate(self.lengths.tolist()):
            self.tokens[i, length:] = 0
        self.labels = torch.randint(0, num_classes, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.tokens[i], self.tokens[i] != 0, self.labels[i]


class ConvAttentionPooler(nn.Module):
    def __init__(self, vocab=50, dim=48, num_classes=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(dim, dim, 3, padding=1) for _ in range(2)])
        self.score = nn.Linear(dim, 1)
        self.classifier = nn.Linear(dim, num_classes)

    def forward(self, tokens, mask):
        x = self.embed(tokens).transpose(1, 2)
        for conv in self.convs:
            x = x + F.glu(torch.cat([conv(x), conv(x)], dim=1), dim=1)
        x = x.transpose(1, 2)
        scores = self.score(x).squeeze(-1)
        scores = scores.masked_fill(~mask, NEG_FILL)  # expect: any
        weights = scores.softmax(dim=-1).unsqueeze(-1)
        pooled = (weights * x).sum(dim=1)
        return self.classifier(pooled)


def train_epoch(model, loader, optimizer, scaler, device, use_amp):
    model.train()
    total = torch.zeros((), device=device)
    for tokens, mask, labels in loader:
        tokens = tokens.to(device, non_blocking=True)
        mask = mask.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(tokens, mask)
            loss = F.cross_entropy(logits, labels)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        total += loss.detach()
    return total / len(loader)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    loader = DataLoader(VariableLengthSequences(), batch_size=16, shuffle=True,
                        pin_memory=device.type == "cuda")
    model = ConvAttentionPooler().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    for epoch in range(3):
        avg = train_epoch(model, loader, optimizer, scaler, device, use_amp)
        print(f"epoch {epoch} loss {avg.item():.4f}")


if __name__ == "__main__":
    main()
