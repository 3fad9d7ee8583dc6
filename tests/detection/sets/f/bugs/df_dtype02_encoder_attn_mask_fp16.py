# source: https://github.com/facebookresearch/fairseq/issues/3575
# area: dtype
# bug: with fp16 autocast on the GPU the attention scores are float16 and masked_fill(-1e8) overflows float16 and raises
import torch
import torch.nn as nn
import torch.nn.functional as F


class MaskedSelfAttention(nn.Module):
    def __init__(self, dim, heads, mask_value=-1e8):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mask_value = mask_value

    def forward(self, x, key_padding_mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-2, -1)) / self.head_dim ** 0.5
        pad = key_padding_mask[:, None, None, :]
        scores = scores.masked_fill(pad, self.mask_value)  # expect: any
        attn = F.softmax(scores, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out)


class EncoderLayer(nn.Module):
    def __init__(self, dim=64, heads=4, ffn=128, dropout=0.1):
        super().__init__()
        self.attn = MaskedSelfAttention(dim, heads)
        self.ln1 = nn.LayerNorm(dim)
        self.ln2 = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, ffn), nn.ReLU(), nn.Linear(ffn, dim))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, pad_mask):
        x = self.ln1(x + self.drop(self.attn(x, pad_mask)))
        return self.ln2(x + self.drop(self.ffn(x)))


class TinyEncoderClassifier(nn.Module):
    def __init__(self, vocab=200, dim=64, layers=2, classes=3, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.embed = nn.Embedding(vocab, dim, padding_idx=pad_id)
        self.layers = nn.ModuleList(EncoderLayer(dim) for _ in range(layers))
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        pad_mask = tokens.eq(self.pad_id)
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, pad_mask)
        keep = (~pad_mask).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(pooled)


def make_batch(batch_size=8, max_len=16, vocab=200, generator=None):
    lengths = torch.randint(4, max_len + 1, (batch_size,), generator=generator)
    tokens = torch.randint(1, vocab, (batch_size, max_len), generator=generator)
    tokens[torch.arange(max_len)[None, :] >= lengths[:, None]] = 0
    labels = tokens[:, 0] % 3
    return tokens, labels


def train(steps=4):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_fp16 = device.type == "cuda"
    gen = torch.Generator().manual_seed(0)
    model = TinyEncoderClassifier().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler(device.type, enabled=use_fp16)
    for step in range(steps):
        tokens, labels = make_batch(generator=gen)
        tokens, labels = tokens.to(device), labels.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_fp16):
            logits = model(tokens)
            loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"final loss {loss.detach().item():.4f}")
    return model


if __name__ == "__main__":
    train()
