# source: https://github.com/QwenAudio/FunMusic/issues/28
# area: AMP
# bug: on a GPU the model weights are loaded in float16 and then trained with GradScaler, so unscale_ raises "Attempting to unscale FP16 gradients"
import torch
import torch.nn as nn
import torch.nn.functional as F


class FinetuneArgs:
    vocab = 256
    dim = 64
    layers = 2
    heads = 4
    seq_len = 32
    batch = 8
    steps = 5
    lr = 2e-4
    max_norm = 1.0


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln2(x))


class TokenLM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.emb = nn.Embedding(a.vocab, a.dim)
        self.blocks = nn.ModuleList(Block(a.dim, a.heads) for _ in range(a.layers))
        self.head = nn.Linear(a.dim, a.vocab)

    def forward(self, tokens):
        T = tokens.size(1)
        mask = torch.triu(torch.full((T, T), float("-inf"), device=tokens.device), 1)
        x = self.emb(tokens)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(x)


def load_model(args, device):
    model = TokenLM(args)
    load_dtype = torch.float16 if device.type == "cuda" else torch.float32
    return model.to(device=device, dtype=load_dtype)  # expect: any


def update_parameters(model, optimizer, scaler, loss, max_norm):
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)


def main():
    torch.manual_seed(0)
    args = FinetuneArgs()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    model = load_model(args, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    running = torch.zeros((), device=device)
    for _ in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq_len + 1), device=device)
        with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
            logits = model(tokens[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, args.vocab).float(), tokens[:, 1:].reshape(-1))
        update_parameters(model, optimizer, scaler, loss, args.max_norm)
        running += loss.detach()
    print("avg loss", (running / args.steps).item())


if __name__ == "__main__":
    main()
