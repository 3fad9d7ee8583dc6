# source: https://github.com/pytorch/torchchat/issues/1147
# area: transfer & sync
# bug: each decode step pulls the sampled ids to Python and rebuilds next_token with torch.tensor(..., device=device), a GPU->CPU->GPU round trip per token
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class CharTokenizer:
    def __init__(self):
        self.itos = [chr(i) for i in range(32, 127)]
        self.stoi = {c: i for i, c in enumerate(self.itos)}

    @property
    def vocab_size(self):
        return len(self.itos)

    def encode(self, s):
        return [self.stoi.get(c, 0) for c in s]

    def decode(self, ids):
        return "".join(self.itos[i] for i in ids)


class DecoderStage(nn.Module):
    def __init__(self, vocab, dim=96, heads=4, layers=2, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):
        T = ids.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=ids.device)
        h = self.tok(ids) + self.pos(torch.arange(T, device=ids.device))
        return self.out(self.norm(self.body(h, mask=mask, is_causal=True)))


def _batch_decode_next_tokens(logits, pos, temperature=0.0):
    last = logits[:, pos, :]
    if temperature > 0:
        ids = torch.multinomial(F.softmax(last / temperature, dim=-1), 1).squeeze(1)
    else:
        ids = last.argmax(dim=-1)
    return [(tok, pos) for tok in ids.tolist()]  # expect[rt]: any


@torch.no_grad()
def generate(model, tokenizer, prompts, max_new_tokens=24):
    width = max(len(p) for p in prompts)
    ids = torch.tensor([tokenizer.encode(p.rjust(width)) for p in prompts], device=device)
    for _ in range(max_new_tokens):
        logits = model(ids)
        decode_results = _batch_decode_next_tokens(logits, pos=ids.size(1) - 1)
        next_token = torch.tensor([[tok] for tok, _ in decode_results], device=device)  # expect[rt]: any
        ids = torch.cat([ids, next_token], dim=1)
    return [tokenizer.decode(row) for row in ids[:, width:].cpu().tolist()]


def main():
    torch.manual_seed(0)
    tok = CharTokenizer()
    model = DecoderStage(tok.vocab_size).to(device).eval()
    prompts = ["The GPU is", "Pipeline stage", "hello"]
    for p, out in zip(prompts, generate(model, tok, prompts)):
        print(repr(p), "->", repr(out))


if __name__ == "__main__":
    main()
