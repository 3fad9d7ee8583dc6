# source: https://github.com/zai-org/VisionReward/issues/7
# area: dtype
# bug: on the GPU the token embeddings are bfloat16 while the vision projector stays float32, so writing image features into the embedding sequence fails with "Index put requires the source and destination dtypes match"
import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGE_TOKEN = 3


class ScoringConfig:
    vocab = 1000
    dim = 96
    vision_dim = 48
    patches = 16
    layers = 2
    heads = 4


class VisionProjector(nn.Module):
    def __init__(self, vision_dim, dim):
        super().__init__()
        self.patch = nn.Conv2d(3, vision_dim, kernel_size=8, stride=8)
        self.proj = nn.Sequential(nn.Linear(vision_dim, dim), nn.GELU(), nn.Linear(dim, dim))

    def forward(self, images):
        patches = self.patch(images).flatten(2).transpose(1, 2)
        return self.proj(patches)


class RewardScorer(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        self.vision = VisionProjector(cfg.vision_dim, cfg.dim)
        self.embed = nn.Embedding(cfg.vocab, cfg.dim).to(dtype)
        layer = nn.TransformerEncoderLayer(cfg.dim, cfg.heads, 4 * cfg.dim, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, cfg.layers).to(dtype)
        self.score_head = nn.Linear(cfg.dim, 1).to(dtype)
        self.dtype = dtype

    def forward(self, input_ids, images):
        embeds = self.embed(input_ids)
        image_feats = self.vision(images)
        image_mask = input_ids == IMAGE_TOKEN
        embeds[image_mask] = image_feats.reshape(-1, image_feats.size(-1))  # expect: any
        hidden = self.encoder(embeds)
        return self.score_head(hidden[:, -1]).squeeze(-1)


def build_prompt(cfg, batch, text_len, generator):
    text = torch.randint(10, cfg.vocab, (batch, text_len), generator=generator)
    image = torch.full((batch, cfg.patches), IMAGE_TOKEN)
    return torch.cat([image, text], dim=1)


@torch.no_grad()
def score_pairs(model, cfg, device, n_pairs=8):
    g = torch.Generator().manual_seed(0)
    wins = torch.zeros((), device=device)
    for _ in range(n_pairs):
        ids = build_prompt(cfg, 2, 20, g).to(device)
        images = torch.rand(2, 3, 32, 32, generator=g).to(device)
        scores = model(ids, images)
        wins += (scores[0] > scores[1]).float()
    return wins.item() / n_pairs


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    cfg = ScoringConfig()
    model = RewardScorer(cfg, dtype).to(device).eval()
    rate = score_pairs(model, cfg, device)
    print(f"first candidate preferred in {rate:.2%} of pairs")
    print("projector dtype:", next(model.vision.parameters()).dtype, "text dtype:", model.embed.weight.dtype)


if __name__ == "__main__":
    main()
