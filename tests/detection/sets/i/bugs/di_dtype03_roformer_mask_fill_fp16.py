# source: https://github.com/IDEA-CCNL/Fengshenbang-LM/issues/25
# area: dtype
# bug: padding positions are filled with -1e8, which is outside the float16 range; once the model is cast to half on the GPU masked_fill raises "value cannot be converted to type at::Half without overflow"
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class EncoderConfig:
    vocab_size = 1000
    hidden = 64
    heads = 4
    layers = 2
    max_len = 48
    num_labels = 3
    pad_id = 0


class SelfAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x, pad_mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(pad_mask[:, None, None, :], -1e8)  # expect: any
        probs = F.softmax(scores, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(b, t, -1)
        return self.out(ctx)


class EncoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = SelfAttention(cfg)
        self.ln1 = nn.LayerNorm(cfg.hidden)
        self.ff = nn.Sequential(nn.Linear(cfg.hidden, 4 * cfg.hidden), nn.GELU(), nn.Linear(4 * cfg.hidden, cfg.hidden))
        self.ln2 = nn.LayerNorm(cfg.hidden)

    def forward(self, x, pad_mask):
        x = self.ln1(x + self.attn(x, pad_mask))
        return self.ln2(x + self.ff(x))


class TextClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=cfg.pad_id)
        self.pos = nn.Embedding(cfg.max_len, cfg.hidden)
        self.layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))
        self.cls = nn.Linear(cfg.hidden, cfg.num_labels)

    def forward(self, ids):
        pad_mask = ids.eq(self.cfg.pad_id)
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        for layer in self.layers:
            x = layer(x, pad_mask)
        return self.cls(x[:, 0])


def random_batch(cfg, batch=8):
    lengths = torch.randint(8, cfg.max_len, (batch,))
    ids = torch.randint(1, cfg.vocab_size, (batch, cfg.max_len))
    ids[torch.arange(cfg.max_len)[None, :] >= lengths[:, None]] = cfg.pad_id
    return ids


@torch.no_grad()
def predict(model, batches, device):
    preds = []
    for ids in batches:
        preds.append(model(ids.to(device)).argmax(-1))
    return torch.cat(preds).cpu()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    cfg = EncoderConfig()
    model = TextClassifier(cfg).to(device=device, dtype=dtype).eval()
    batches = [random_batch(cfg) for _ in range(4)]
    preds = predict(model, batches, device)
    print("label histogram", torch.bincount(preds, minlength=cfg.num_labels).tolist())


if __name__ == "__main__":
    main()
