# source: https://github.com/efeslab/fiddler/pull/6
# area: transfer & sync
# bug: hidden states are copied GPU->CPU with non_blocking=True and the CPU expert reads them immediately, before the copy has finished
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class MoEConfig:
    vocab_size: int = 128
    hidden: int = 32
    ffn: int = 64
    n_experts: int = 4
    top_k: int = 2
    n_layers: int = 2
    gpu_experts: tuple = (0, 1)


class Expert(nn.Module):
    def __init__(self, hidden, ffn):
        super().__init__()
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class OffloadedMoE(nn.Module):
    def __init__(self, cfg, device):
        super().__init__()
        self.cfg, self.device = cfg, device
        self.gate = nn.Linear(cfg.hidden, cfg.n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(cfg.hidden, cfg.ffn) for _ in range(cfg.n_experts))
        self.on_gpu = set(cfg.gpu_experts)

    def place(self):
        self.gate.to(self.device)
        for i, expert in enumerate(self.experts):
            expert.to(self.device if i in self.on_gpu else torch.device("cpu"))
        return self

    def run_expert_at_cpu(self, idx, hidden):
        x_cpu = hidden.to("cpu", non_blocking=True)  # expect: any
        y_cpu = self.experts[idx](x_cpu)
        return y_cpu.to(self.device)

    def forward(self, hidden):
        logits = self.gate(hidden)
        weights, selected = torch.topk(logits.softmax(dim=-1), self.cfg.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        dense_w = torch.zeros_like(logits).scatter(-1, selected, weights)
        out = torch.zeros_like(hidden)
        for i in range(self.cfg.n_experts):
            if i in self.on_gpu:
                y = self.experts[i](hidden)
            else:
                y = self.run_expert_at_cpu(i, hidden)
            out = out + dense_w[..., i:i + 1] * y
        return out


class TinyMoELM(nn.Module):
    def __init__(self, cfg, device):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.norms = nn.ModuleList(nn.LayerNorm(cfg.hidden) for _ in range(cfg.n_layers))
        self.moes = nn.ModuleList(OffloadedMoE(cfg, device) for _ in range(cfg.n_layers))
        self.head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)
        self.device = device

    def place(self):
        self.embed.to(self.device)
        self.norms.to(self.device)
        self.head.to(self.device)
        for moe in self.moes:
            moe.place()
        return self

    def forward(self, tokens):
        h = self.embed(tokens)
        for norm, moe in zip(self.norms, self.moes):
            h = h + moe(norm(h))
        return self.head(h)


@torch.no_grad()
def greedy_generate(model, prompt, new_tokens=8):
    tokens = prompt
    for _ in range(new_tokens):
        logits = model(tokens)[:, -1]
        tokens = torch.cat([tokens, logits.argmax(dim=-1, keepdim=True)], dim=1)
    return tokens


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyMoELM(MoEConfig(), device).place().eval()
    prompt = torch.randint(0, 128, (2, 6), device=device)
    out = greedy_generate(model, prompt)
    print("generated:", out[:, 6:].cpu().tolist())
