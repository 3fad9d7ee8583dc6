# source: https://github.com/rasbt/reasoning-from-scratch/issues/177
# area: transfer & sync
# bug: the sampling helper moves the probabilities to the CPU for torch.multinomial and back to the GPU for every generated token
import torch
import torch.nn as nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=48, n_layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=96, batch_first=True)
        self.blocks = nn.TransformerEncoder(layer, n_layers)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, idx):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=idx.device)
        h = self.blocks(self.tok(idx) + self.pos(pos), mask=mask, is_causal=True)
        return self.lm_head(h)


def sample_next(logits, temperature=0.8, top_k=10):
    logits = logits / temperature
    v, _ = torch.topk(logits, top_k)
    logits = logits.masked_fill(logits < v[:, [-1]], float("-inf"))
    probas = torch.softmax(logits, dim=-1)
    return torch.multinomial(probas.cpu(), num_samples=1).to(logits.device)  # expect: any


@torch.no_grad()
def generate(model, prompt, max_new_tokens=24):
    model.eval()
    idx = prompt
    for _ in range(max_new_tokens):
        logits = model(idx[:, -64:])[:, -1, :]
        idx = torch.cat([idx, sample_next(logits)], dim=1)
    return idx


def train_steps(model, steps=30, vocab=64, T=32):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(steps):
        start = torch.randint(0, vocab, (16, 1))
        seq = ((start + torch.arange(T + 1)) % vocab).to(device)
        logits = model(seq[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), seq[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


if __name__ == "__main__":
    model = TinyLM().to(device)
    print("final train loss", round(train_steps(model), 3))
    out = generate(model, torch.tensor([[5, 6, 7]], device=device))
    print("sample:", out[0].tolist())
