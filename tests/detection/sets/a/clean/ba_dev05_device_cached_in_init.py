# twin of: bugs/ba_dev05_device_cached_in_init.py
# area: device placement
# correct: device is a property read from the parameters on every call, so it follows model.to(device)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=50, d_model=32, n_head=4, n_layer=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_head, 4 * d_model, dropout=0.0, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.lm_head = nn.Linear(d_model, vocab)

    @property
    def device(self):
        return next(self.parameters()).device

    def causal_mask(self, T):
        return torch.triu(torch.full((T, T), float("-inf"), device=self.device), diagonal=1)

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        h = self.tok(idx) + self.pos(pos)
        h = self.blocks(h, mask=self.causal_mask(T))
        return self.lm_head(h)


def synthetic_batches(n_batches=8, batch=8, T=16, vocab=50):
    for _ in range(n_batches):
        start = torch.randint(0, vocab, (batch, 1))
        seq = (start + torch.arange(T + 1)) % vocab  # learnable: next token = +1
        yield seq[:, :-1], seq[:, 1:]


def main():
    model = TinyCausalLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(3):
        model.train()
        for x, y in synthetic_batches():
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
