# source: https://github.com/Lightning-AI/pytorch-lightning/issues/17624
# area: device placement
# bug: the metric modules are stored in a plain dict, so model.to(device) does not move their state buffers and update() mixes CPU state with GPU predictions
import torch
import torch.nn as nn
import torch.nn.functional as F


class MacroF1(nn.Module):
    """Streaming macro-F1 that keeps its counts in registered buffers."""

    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.register_buffer("tp", torch.zeros(num_classes))
        self.register_buffer("fp", torch.zeros(num_classes))
        self.register_buffer("fn", torch.zeros(num_classes))

    def reset(self):
        for buf in (self.tp, self.fp, self.fn):
            buf.zero_()

    @torch.no_grad()
    def update(self, preds, target):
        hit = (preds == target).float()
        self.tp.index_add_(0, target, hit)
        self.fp.index_add_(0, preds, 1.0 - hit)
        self.fn.index_add_(0, target, 1.0 - hit)

    def compute(self):
        precision = self.tp / (self.tp + self.fp).clamp(min=1.0)
        recall = self.tp / (self.tp + self.fn).clamp(min=1.0)
        return (2 * precision * recall / (precision + recall).clamp(min=1e-8)).mean()


class TextCNN(nn.Module):
    def __init__(self, vocab_size=500, emb_dim=32, num_classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_dim, padding_idx=0)
        self.conv = nn.Conv1d(emb_dim, 64, kernel_size=3, padding=1)
        self.classifier = nn.Linear(64, num_classes)
        self.metrics = {"train_f1": MacroF1(num_classes), "val_f1": MacroF1(num_classes)}  # expect: any

    def forward(self, tokens):
        h = self.embedding(tokens).transpose(1, 2)
        h = F.relu(self.conv(h)).amax(dim=-1)
        return self.classifier(h)

    def step(self, batch, stage):
        tokens, labels = batch
        logits = self(tokens)
        loss = F.cross_entropy(logits, labels)
        self.metrics[f"{stage}_f1"].update(logits.argmax(dim=-1), labels)
        return loss


def synthetic_batches(n_batches, batch_size=32, seq_len=20, vocab_size=500, num_classes=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        labels = torch.randint(0, num_classes, (batch_size,), generator=g)
        tokens = torch.randint(1, vocab_size, (batch_size, seq_len), generator=g)
        tokens[:, 0] = labels + 1
        yield tokens, labels


def fit(model, device, epochs=2):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(epochs):
        model.train()
        for tokens, labels in synthetic_batches(12, seed=epoch):
            loss = model.step((tokens.to(device), labels.to(device)), "train")
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            for tokens, labels in synthetic_batches(5, seed=100 + epoch):
                model.step((tokens.to(device), labels.to(device)), "val")
        train_f1 = model.metrics["train_f1"].compute()
        val_f1 = model.metrics["val_f1"].compute()
        print(f"epoch {epoch}: train_f1={train_f1.item():.3f} val_f1={val_f1.item():.3f}")
        for metric in model.metrics.values():
            metric.reset()


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    fit(TextCNN().to(device), device)
