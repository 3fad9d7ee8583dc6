# source: https://github.com/Lightning-AI/pytorch-lightning/issues/1429
# area: transfer & sync
# bug: the training-step accuracy helper moves logits and labels to host with .cpu().numpy() on every batch, a blocking copy + sync inside the hot loop
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TextClassifier(nn.Module):
    def __init__(self, vocab=200, dim=32, classes=3):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.fc(self.emb(tokens))


def batch_accuracy(logits, labels):
    preds = logits.argmax(dim=1).cpu().numpy()  # expect[acc]: any
    return float(np.mean(preds == labels.cpu().numpy()))  # expect[acc]: any


def training_step(model, batch, optimizer):
    tokens, labels = (t.to(device) for t in batch)
    logits = model(tokens)
    loss = F.cross_entropy(logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.detach(), batch_accuracy(logits.detach(), labels)


def main():
    tokens = torch.randint(0, 200, (480, 10))
    labels = (tokens[:, 0] % 3).long()
    loader = DataLoader(TensorDataset(tokens, labels), batch_size=32, shuffle=True)
    model = TextClassifier().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        accs = []
        loss_sum = torch.zeros((), device=device)
        for batch in loader:
            loss, acc = training_step(model, batch, optimizer)
            loss_sum += loss
            accs.append(acc)
        print(f"epoch {epoch} loss {loss_sum.item() / len(loader):.3f} acc {np.mean(accs):.3f}")


if __name__ == "__main__":
    main()
