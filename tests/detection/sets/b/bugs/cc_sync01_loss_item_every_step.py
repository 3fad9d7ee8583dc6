# source: https://github.com/meta-pytorch/torchtune/pull/522
# area: transfer & sync
# bug: loss.item() is called on every step for a progress string, forcing a GPU->CPU sync each iteration even though it is logged only every 5 steps
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        return self.head(h)


def make_data(n=128, seq=10, vocab=64):
    tokens = torch.randint(0, vocab, (n, seq + 1))
    return TensorDataset(tokens[:, :-1], tokens[:, 1:])


def train(model, loader, optimizer, epochs=2, log_every=5):
    loss_fn = nn.CrossEntropyLoss()
    step = 0
    for epoch in range(epochs):
        model.train()
        for inputs, labels in loader:
            inputs, labels = inputs.to(device), labels.to(device)
            logits = model(inputs)
            loss = loss_fn(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            pbar_desc = f"epoch {epoch} step {step} loss {loss.item():.4f}"  # expect: any
            if step % log_every == 0:
                print(pbar_desc)
    return step


def main():
    model = TinyLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loader = DataLoader(make_data(), batch_size=16, shuffle=True)
    steps = train(model, loader, optimizer)
    print("finished", steps, "steps")


if __name__ == "__main__":
    main()
