# source: https://github.com/Yu-Fangxu/COLD-Attack/issues/20
# area: dtype
# bug: the n-gram identity filter is a float32 factory tensor while the LM runs in fp16 on the GPU, so conv2d gets Half input and Float weight
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class DecodeConfig:
    vocab_size: int = 120
    hidden: int = 64
    prefix_len: int = 4
    gen_len: int = 12
    ngram: int = 2
    steps: int = 6
    lr: float = 0.05
    bleu_weight: float = 0.5


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.mix = nn.Sequential(nn.Linear(hidden, hidden * 2), nn.GELU(), nn.Linear(hidden * 2, hidden))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab_size)

    def forward_embeds(self, embeds):
        ctx = embeds.cumsum(dim=1) / torch.arange(1, embeds.size(1) + 1, device=embeds.device).view(1, -1, 1)
        h = self.norm(embeds + self.mix(ctx))
        return self.head(h)


def batch_log_bleu_loss(probs, ref_ids, ngram):
    # probs: [B, T, V]; ref_ids: [B, R]
    index = ref_ids.unsqueeze(1).expand(-1, probs.size(1), -1)
    match = torch.gather(probs, 2, index).unsqueeze(1)  # [B, 1, T, R]
    eye_filter = torch.eye(ngram, device=probs.device).view(1, 1, ngram, ngram)  # expect[filt]: any
    term = F.conv2d(match, eye_filter) / ngram  # expect[filt]: any
    best = term.amax(dim=-1).squeeze(1)
    return -torch.log(best.clamp_min(1e-4)).mean()


class SoftPrefixDecoder:
    def __init__(self, model, cfg, device, dtype):
        self.model = model
        self.cfg = cfg
        self.device = device
        self.dtype = dtype
        self.prefix = nn.Parameter(torch.randn(1, cfg.prefix_len, cfg.hidden, device=device) * 0.02)
        self.opt = torch.optim.Adam([self.prefix], lr=cfg.lr)

    def step(self, prompt_ids, ref_ids):
        prompt = self.model.embed(prompt_ids)
        embeds = torch.cat([self.prefix.to(self.dtype).expand(prompt.size(0), -1, -1), prompt], dim=1)
        logits = self.model.forward_embeds(embeds)[:, -self.cfg.gen_len:]
        probs = logits.softmax(dim=-1)
        fluency = -(probs * logits.log_softmax(dim=-1)).sum(-1).mean()
        bleu = batch_log_bleu_loss(probs, ref_ids, self.cfg.ngram)
        loss = fluency.float() + self.cfg.bleu_weight * bleu.float()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    cfg = DecodeConfig()

    model = TinyCausalLM(cfg.vocab_size, cfg.hidden).to(device=device, dtype=dtype).eval()
    for p in model.parameters():
        p.requires_grad_(False)

    prompt_ids = torch.randint(0, cfg.vocab_size, (2, cfg.gen_len), device=device)
    ref_ids = torch.randint(0, cfg.vocab_size, (2, 8), device=device)

    decoder = SoftPrefixDecoder(model, cfg, device, dtype)
    history = []
    for _ in range(cfg.steps):
        history.append(decoder.step(prompt_ids, ref_ids))
    losses = torch.stack(history).cpu()
    print("first/last loss:", round(losses[0].item(), 4), round(losses[-1].item(), 4))


if __name__ == "__main__":
    main()
