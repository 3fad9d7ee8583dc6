# source: https://github.com/huggingface/transformers/pull/35608
# area: device placement
# bug: original_inv_freq is a plain attribute captured on the CPU at construction; after model.to(cuda) a long prompt followed by a short one restores inv_freq from it and the rotary matmul mixes CPU and GPU tensors
import torch
import torch.nn as nn
import torch.nn.functional as F


def compute_inv_freq(head_dim, base, device=None):
    return 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float, device=device) / head_dim))


class DynamicNTKRotaryEmbedding(nn.Module):
    def __init__(self, head_dim, max_position=64, base=10000.0, scaling_factor=2.0):
        super().__init__()
        self.head_dim = head_dim
        self.base = base
        self.scaling_factor = scaling_factor
        inv_freq = compute_inv_freq(head_dim, base)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = inv_freq  # expect[w]: any
        self.original_max_seq_len = max_position
        self.max_seq_len_cached = max_position

    def _dynamic_frequency_update(self, seq_len, device):
        if seq_len > self.max_seq_len_cached:
            scale = (self.scaling_factor * seq_len / self.original_max_seq_len) - (self.scaling_factor - 1)
            base = self.base * scale ** (self.head_dim / (self.head_dim - 2))
            self.register_buffer("inv_freq", compute_inv_freq(self.head_dim, base, device), persistent=False)
            self.max_seq_len_cached = seq_len
        if seq_len < self.original_max_seq_len < self.max_seq_len_cached:
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)  # expect[w]: any
            self.max_seq_len_cached = self.original_max_seq_len

    def forward(self, x, position_ids):
        self._dynamic_frequency_update(x.shape[1], x.device)
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([-x2, x1], dim=-1)


class RotaryBlock(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(), nn.Linear(4 * dim, dim))
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        cos, sin = cos[:, None], sin[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, -1))
        return x + self.mlp(self.norm2(x))


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=128, dim=64, n_heads=4, n_layers=2, max_position=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rotary = DynamicNTKRotaryEmbedding(dim // n_heads, max_position=max_position)
        self.blocks = nn.ModuleList(RotaryBlock(dim, n_heads) for _ in range(n_layers))
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        pos = torch.arange(tokens.size(1), device=tokens.device).unsqueeze(0).expand(tokens.size(0), -1)
        cos, sin = self.rotary(x, pos)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.lm_head(x)


@torch.inference_mode()
def score_prompts(model, prompts):
    results = []
    for tokens in prompts:
        logits = model(tokens)
        nll = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), tokens[:, 1:].reshape(-1))
        results.append(nll)
    return torch.stack(results)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyCausalLM().to(device).eval()
    lengths = [48, 160, 32]
    prompts = [torch.randint(0, 128, (2, n), device=device) for n in lengths]
    nll = score_prompts(model, prompts)
    for n, v in zip(lengths, nll.tolist()):
        print(f"len {n:4d} nll {v:.3f}")


if __name__ == "__main__":
    main()
