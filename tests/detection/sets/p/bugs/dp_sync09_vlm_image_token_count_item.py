# source: https://github.com/ByteDance-Seed/VeOmni/pull/764
# area: transfer & sync
# bug: the VLM forward counts image placeholder tokens with .item() to validate them, a device-to-host sync in every training step
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class VLMConfig:
    vocab_size: int = 200
    image_token_id: int = 199
    pad_token_id: int = 0
    hidden: int = 48
    patch: int = 4
    image_size: int = 16
    merge: int = 2
    text_len: int = 12
    batch_size: int = 4
    steps: int = 4
    lr: float = 5e-4

    @property
    def tokens_per_image(self):
        side = self.image_size // self.patch // self.merge
        return side * side


class PatchMergerVision(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.patch_embed = nn.Conv2d(3, cfg.hidden, cfg.patch, stride=cfg.patch)
        self.block = nn.TransformerEncoderLayer(cfg.hidden, 4, 2 * cfg.hidden, batch_first=True)
        self.merger = nn.Linear(cfg.hidden * cfg.merge ** 2, cfg.hidden)

    def forward(self, pixel_values):
        x = self.patch_embed(pixel_values)
        b, d, gh, gw = x.shape
        x = self.block(x.flatten(2).transpose(1, 2)).transpose(1, 2).reshape(b, d, gh, gw)
        m = self.cfg.merge
        x = x.reshape(b, d, gh // m, m, gw // m, m).permute(0, 2, 4, 1, 3, 5)
        return self.merger(x.reshape(b * (gh // m) * (gw // m), d * m * m))


class TinyVLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.visual = PatchMergerVision(cfg)
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=cfg.pad_token_id)
        self.decoder = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab_size)

    def get_placeholder_mask(self, input_ids, inputs_embeds, image_features):
        special_image_mask = input_ids == self.cfg.image_token_id
        n_image_tokens = special_image_mask.sum().item()  # expect: any
        if n_image_tokens != image_features.shape[0]:
            raise ValueError(f"Image features and image tokens do not match: {n_image_tokens} vs {image_features.shape[0]}")
        return special_image_mask.unsqueeze(-1).expand_as(inputs_embeds)

    def forward(self, input_ids, pixel_values, labels=None):
        inputs_embeds = self.embed_tokens(input_ids)
        image_embeds = self.visual(pixel_values).to(inputs_embeds.dtype)
        mask = self.get_placeholder_mask(input_ids, inputs_embeds, image_embeds)
        inputs_embeds = inputs_embeds.masked_scatter(mask, image_embeds)
        hidden, _ = self.decoder(inputs_embeds)
        logits = self.lm_head(hidden)
        if labels is None:
            return logits
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100)


def build_batch(cfg, device):
    b, n_img = cfg.batch_size, cfg.tokens_per_image
    image_ids = torch.full((b, n_img), cfg.image_token_id, device=device)
    text_ids = torch.randint(1, cfg.image_token_id, (b, cfg.text_len), device=device)
    input_ids = torch.cat([text_ids[:, :1], image_ids, text_ids[:, 1:]], dim=1)
    labels = input_ids.masked_fill(input_ids == cfg.image_token_id, -100)
    pixels = torch.rand(b, 3, cfg.image_size, cfg.image_size, device=device)
    return input_ids, pixels, labels


def train(cfg):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyVLM(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    losses = []
    for _ in range(cfg.steps):
        input_ids, pixels, labels = build_batch(cfg, device)
        loss = model(input_ids, pixels, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return torch.stack(losses).mean().item()


if __name__ == "__main__":
    torch.manual_seed(0)
    print(f"mean caption loss: {train(VLMConfig()):.4f}")
