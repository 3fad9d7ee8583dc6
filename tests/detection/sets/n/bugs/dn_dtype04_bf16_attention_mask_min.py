# source: https://github.com/espnet/espnet/pull/4584
# area: dtype
# bug: padded attention scores are filled with float32's minimum, which overflows bfloat16, so masked_fill raises once the encoder runs in bf16 on the GPU
import math

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
COMPUTE_DTYPE = torch.bfloat16 if device.type == "cuda" else torch.float32
MASK_VALUE = torch.finfo(torch.float32).min  # expect[w]: any


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.d_k = dim // heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.d_k).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        key_pad = pad_mask[:, None, None, :]
        scores = scores.masked_fill(key_pad, MASK_VALUE)  # expect[w]: any
        attn = torch.softmax(scores, dim=-1).masked_fill(key_pad, 0.0)
        ctx = (attn @ v).transpose(1, 2).reshape(b, t, -1)
        return self.out(ctx)


class ConformerLiteBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = MultiHeadSelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim))

    def forward(self, x, pad_mask):
        x = x + self.attn(self.norm1(x), pad_mask)
        return x + self.ff(self.norm2(x))


class SpeechEncoder(nn.Module):
    def __init__(self, n_mels=40, dim=64, heads=4, layers=2, vocab=32):
        super().__init__()
        self.subsample = nn.Sequential(nn.Conv1d(n_mels, dim, 3, stride=2, padding=1), nn.GELU())
        self.blocks = nn.ModuleList(ConformerLiteBlock(dim, heads) for _ in range(layers))
        self.ctc_head = nn.Linear(dim, vocab)

    def forward(self, feats, feat_lens):
        x = self.subsample(feats.transpose(1, 2)).transpose(1, 2)
        out_lens = (feat_lens + 1) // 2
        pad_mask = torch.arange(x.size(1), device=x.device)[None, :] >= out_lens[:, None]
        for block in self.blocks:
            x = block(x, pad_mask)
        return self.ctc_head(x).float().log_softmax(-1), out_lens


def fake_utterances(batch, max_frames=120, n_mels=40):
    lens = torch.randint(max_frames // 2, max_frames + 1, (batch,))
    feats = torch.randn(batch, max_frames, n_mels)
    feats = feats * (torch.arange(max_frames)[None, :, None] < lens[:, None, None])
    return feats, lens


@torch.inference_mode()
def greedy_transcribe(model, feats, lens, blank=0):
    log_probs, out_lens = model(feats.to(device, COMPUTE_DTYPE), lens.to(device))
    best = log_probs.argmax(-1)
    keep = torch.ones_like(best, dtype=torch.bool)
    keep[:, 1:] = best[:, 1:] != best[:, :-1]
    keep &= best != blank
    keep &= torch.arange(best.size(1), device=best.device)[None, :] < out_lens[:, None]
    return best.cpu(), keep.cpu()


def main():
    torch.manual_seed(0)
    model = SpeechEncoder().to(device=device, dtype=COMPUTE_DTYPE).eval()
    feats, lens = fake_utterances(4)
    tokens, keep = greedy_transcribe(model, feats, lens)
    for row in range(tokens.size(0)):
        hyp = tokens[row][keep[row]].tolist()
        print(f"utt{row}: {len(hyp)} tokens -> {hyp[:10]}")


if __name__ == "__main__":
    main()
