# source: https://github.com/hiyouga/LlamaFactory/issues/5943
# area: dtype
# bug: under CUDA autocast each expert returns fp16, but its output is index-assigned into a float32 buffer made with zeros_like, so index_put raises a dtype mismatch on the GPU only
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ExpertMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class SwitchFFN(nn.Module):
    def __init__(self, dim, hidden, num_experts=4):
        super().__init__()
        self.router = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList(ExpertMLP(dim, hidden) for _ in range(num_experts))

    def forward(self, x):
        batch, seq, dim = x.shape
        flat = x.reshape(-1, dim)
        probs = F.softmax(self.router(flat), dim=-1)
        gate, choice = probs.max(dim=-1)
        routed = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            sel = choice == e
            routed[sel] = expert(flat[sel])  # expect: any
        aux = (probs.mean(0) * F.one_hot(choice, len(self.experts)).float().mean(0)).sum()
        return (routed * gate.unsqueeze(-1)).reshape(batch, seq, dim), aux


class MoEBlock(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.moe = SwitchFFN(dim, hidden)

    def forward(self, x, causal_mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=causal_mask, need_weights=False)[0]
        y, aux = self.moe(self.ln2(x))
        return x + y, aux


class TinyMoELM(nn.Module):
    def __init__(self, vocab=512, dim=64, heads=4, hidden=128, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(MoEBlock(dim, heads, hidden) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids):
        T = ids.shape[1]
        mask = torch.triu(torch.full((T, T), float("-inf"), device=ids.device), diagonal=1)
        x = self.tok(ids) + self.pos(torch.arange(T, device=ids.device))
        aux_total = x.new_zeros(())
        for block in self.blocks:
            x, aux = block(x, mask)
            aux_total = aux_total + aux
        return self.lm_head(self.norm(x)), aux_total


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    torch.manual_seed(0)
    model = TinyMoELM().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    data = torch.randint(0, 512, (64, 33), device=device)
    for step in range(8):
        batch = data[(step * 8) % 64:(step * 8) % 64 + 8]
        with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=use_amp):
            logits, aux = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1)) + 0.01 * aux
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"final loss {loss.item():.3f} (uniform {math.log(512):.3f})")


if __name__ == "__main__":
    main()
