# source: https://github.com/matanbt/TROPT/pull/8
# area: dtype
# bug: the optimized soft prompt is cloned from the embedding output and so inherits the fp16 model dtype on the GPU; Adam's eps=1e-8 and grad**2 flush to zero in fp16 and the prompt becomes inf/NaN
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class PromptConfig:
    vocab: int = 300
    dim: int = 64
    prompt_len: int = 6
    steps: int = 8
    lr: float = 1e-2


class MeanPoolEncoder(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=dim * 2, batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)

    def encode_embeds(self, embeds):
        h = self.encoder(embeds)
        return F.normalize(h.mean(dim=1), dim=-1)

    def encode_ids(self, ids):
        return self.encode_embeds(self.embed(ids))


class SoftPromptOptimizer:
    def __init__(self, model, cfg):
        self.model = model
        self.cfg = cfg

    def run(self, init_ids, passage_ids, target_emb):
        init = self.model.embed(init_ids).detach().clone()
        prompt = nn.Parameter(init)  # expect: any
        opt = torch.optim.Adam([prompt], lr=self.cfg.lr)
        passage = self.model.embed(passage_ids).detach()
        losses = []
        for _ in range(self.cfg.steps):
            emb = self.model.encode_embeds(torch.cat([prompt, passage], dim=1))
            loss = 1.0 - F.cosine_similarity(emb.float(), target_emb.float(), dim=-1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        return prompt.detach(), torch.stack(losses)


def load_encoder(cfg, device):
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    model = MeanPoolEncoder(cfg.vocab, cfg.dim).to(device=device, dtype=dtype).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = PromptConfig()
    model = load_encoder(cfg, device)
    init_ids = torch.randint(0, cfg.vocab, (1, cfg.prompt_len), device=device)
    passage_ids = torch.randint(0, cfg.vocab, (1, 20), device=device)
    with torch.no_grad():
        target_emb = model.encode_ids(torch.randint(0, cfg.vocab, (1, 12), device=device))
    trigger, losses = SoftPromptOptimizer(model, cfg).run(init_ids, passage_ids, target_emb)
    losses = losses.cpu()
    print("loss trajectory:", [round(v, 4) for v in losses.tolist()])
    print("trigger finite:", bool(torch.isfinite(trigger).all().item()))


if __name__ == "__main__":
    main()
