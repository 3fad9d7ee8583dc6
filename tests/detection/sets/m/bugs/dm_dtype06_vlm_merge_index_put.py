# source: https://github.com/hiyouga/LlamaFactory/issues/3807
# area: dtype
# bug: on CUDA the language model is cast to float16 while the vision tower and projector are kept in float32, so writing the projected image features into the float16 text embeddings is an index_put with mismatched dtypes and fails
import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGE_TOKEN = 1
PAD_TOKEN = 0


class VisionTower(nn.Module):
    def __init__(self, patch=8, dim=96):
        super().__init__()
        self.patchify = nn.Conv2d(3, dim, patch, stride=patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, pixels):
        x = self.patchify(pixels).flatten(2).transpose(1, 2)
        return self.norm(x)


class TinyLlava(nn.Module):
    def __init__(self, vocab=512, dim=128, vis_dim=96):
        super().__init__()
        self.vision = VisionTower(dim=vis_dim)
        self.projector = nn.Sequential(nn.Linear(vis_dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.embed = nn.Embedding(vocab, dim, padding_idx=PAD_TOKEN)
        self.decoder = nn.GRU(dim, dim, num_layers=2, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def merge_inputs(self, input_ids, pixels):
        embeds = self.embed(input_ids)
        image_feats = self.projector(self.vision(pixels))
        image_mask = input_ids == IMAGE_TOKEN
        embeds[image_mask] = image_feats.reshape(-1, embeds.size(-1))  # expect: any
        return embeds

    def forward(self, input_ids, pixels):
        h, _ = self.decoder(self.merge_inputs(input_ids, pixels))
        return self.lm_head(h)


def load_for_eval(device):
    model = TinyLlava().to(device).eval()
    if device.type == "cuda":
        model.half()
        model.vision.float()
        model.projector.float()
    return model


def build_prompts(captions, num_patches, device):
    rows = []
    for cap in captions:
        rows.append([IMAGE_TOKEN] * num_patches + cap)
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), PAD_TOKEN, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = torch.tensor(r)
    return ids.to(device)


@torch.no_grad()
def score_captions(model, pixels, input_ids, num_patches):
    logits = model(input_ids, pixels).float()
    targets = input_ids[:, num_patches + 1:]
    pred = logits[:, num_patches:-1]
    nll = F.cross_entropy(pred.reshape(-1, pred.size(-1)), targets.reshape(-1),
                          ignore_index=PAD_TOKEN, reduction="none").view_as(targets)
    lengths = (targets != PAD_TOKEN).sum(dim=1).clamp(min=1)
    return -(nll.sum(dim=1) / lengths)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = load_for_eval(device)
    images = torch.rand(4, 3, 32, 32, device=device)
    num_patches = (32 // 8) ** 2
    captions = [[5, 17, 33, 90, 2], [7, 8, 2], [64, 65, 66, 67, 68, 2], [11, 2]]
    input_ids = build_prompts(captions, num_patches, device)
    scores = score_captions(model, images, input_ids, num_patches)
    best = scores.argmax()
    print("caption scores", [round(s, 3) for s in scores.tolist()], "best", int(best))


if __name__ == "__main__":
    main()
