# source: https://github.com/facebookresearch/multimodal/pull/433
# area: AMP
# bug: the GradScaler is switched on for bfloat16 autocast on CUDA, where loss scaling is useless; it only adds scale/unscale kernels and a host sync in every scaler.step
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass

_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass
class PrecisionConfig:
    precision: str = "bf16"

    @property
    def amp_dtype(self):
        return _DTYPES[self.precision]


class DualEncoder(nn.Module):
    def __init__(self, img_dim=96, txt_vocab=200, embed=64):
        super().__init__()
        self.image_proj = nn.Sequential(nn.Linear(img_dim, 128), nn.GELU(), nn.Linear(128, embed))
        self.token_embed = nn.EmbeddingBag(txt_vocab, 128, mode="mean")
        self.text_proj = nn.Linear(128, embed)
        self.logit_scale = nn.Parameter(torch.tensor(2.659))

    def forward(self, images, tokens):
        img = F.normalize(self.image_proj(images), dim=-1)
        txt = F.normalize(self.text_proj(self.token_embed(tokens)), dim=-1)
        return img, txt, self.logit_scale.exp().clamp(max=100)


def contrastive_loss(img, txt, scale):
    logits = scale * img @ txt.t()
    labels = torch.arange(logits.shape[0], device=logits.device)
    return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels))


class ContrastiveTrainer:
    def __init__(self, model, precision_cfg, device, lr=5e-4):
        self.device = device
        self.model = model.to(device)
        self.pcfg = precision_cfg
        self.autocast_on = device.type == "cuda" and precision_cfg.precision != "fp32"
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.05)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.autocast_on)  # expect: any

    def step(self, images, tokens):
        images, tokens = images.to(self.device), tokens.to(self.device)
        with torch.autocast(self.device.type, dtype=self.pcfg.amp_dtype, enabled=self.autocast_on):
            img, txt, scale = self.model(images, tokens)
            loss = contrastive_loss(img, txt, scale)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()


def synthetic_pairs(n_batches, batch=32, img_dim=96, vocab=200, seq=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n_batches):
        yield torch.randn(batch, img_dim, generator=g), torch.randint(0, vocab, (batch, seq), generator=g)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = ContrastiveTrainer(DualEncoder(), PrecisionConfig(), device)
    losses = torch.stack([trainer.step(i, t) for i, t in synthetic_pairs(8)])
    print(f"first {losses[0].item():.4f} last {losses[-1].item():.4f}")


if __name__ == "__main__":
    main()
