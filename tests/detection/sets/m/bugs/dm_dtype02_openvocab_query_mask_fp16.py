# source: https://github.com/huggingface/transformers/pull/31657
# area: dtype
# bug: on CUDA the open-vocabulary detector runs in float16, and the class head masks padded text queries with the hard-coded -1e6, which is outside the float16 range and raises an overflow error
import torch
import torch.nn as nn
import torch.nn.functional as F


class ClassPredictionHead(nn.Module):
    def __init__(self, dim=96, query_dim=64):
        super().__init__()
        self.dense = nn.Linear(dim, query_dim)
        self.logit_shift = nn.Linear(dim, 1)
        self.logit_scale = nn.Linear(dim, 1)

    def forward(self, image_embeds, query_embeds, query_mask):
        image_class = F.normalize(self.dense(image_embeds), dim=-1)
        query_embeds = F.normalize(query_embeds, dim=-1)
        logits = torch.einsum("bpd,bqd->bpq", image_class, query_embeds)
        shift = self.logit_shift(image_embeds)
        scale = F.elu(self.logit_scale(image_embeds)) + 1
        logits = (logits + shift) * scale
        return logits.masked_fill(query_mask[:, None, :] == 0, -1e6)  # expect: any


class OpenVocabDetector(nn.Module):
    def __init__(self, vocab=1000, dim=96, query_dim=64, patch=16):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(dim, 4, dim * 2, batch_first=True, dropout=0.0), num_layers=2)
        self.text_embed = nn.EmbeddingBag(vocab, query_dim, mode="mean")
        self.box_head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, 4))
        self.class_head = ClassPredictionHead(dim, query_dim)

    def encode_queries(self, token_ids, offsets, batch, max_queries):
        q = self.text_embed(token_ids, offsets)
        return q.view(batch, max_queries, -1)

    def forward(self, pixels, token_ids, offsets, query_mask):
        x = self.patch_embed(pixels).flatten(2).transpose(1, 2)
        x = self.encoder(x)
        queries = self.encode_queries(token_ids, offsets, pixels.size(0), query_mask.size(1))
        boxes = self.box_head(x).sigmoid()
        logits = self.class_head(x, queries, query_mask)
        return boxes, logits


def pack_queries(text_queries, max_queries, device):
    tokens, offsets, mask = [], [], []
    for queries in text_queries:
        padded = queries + [[0]] * (max_queries - len(queries))
        mask.append([1] * len(queries) + [0] * (max_queries - len(queries)))
        for q in padded:
            offsets.append(len(tokens))
            tokens.extend(q)
    as_long = lambda v: torch.tensor(v, dtype=torch.long, device=device)
    return as_long(tokens), as_long(offsets), as_long(mask)


@torch.no_grad()
def detect(model, pixels, text_queries, max_queries=4, threshold=0.1):
    token_ids, offsets, query_mask = pack_queries(text_queries, max_queries, pixels.device)
    boxes, logits = model(pixels.to(next(model.parameters()).dtype), token_ids, offsets, query_mask)
    probs = logits.float().sigmoid()
    scores, labels = probs.max(dim=-1)
    return boxes.float(), scores, labels, scores > threshold


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = OpenVocabDetector().to(device).eval()
    if device.type == "cuda":
        model = model.half()
    images = torch.rand(2, 3, 128, 128, device=device)
    text_queries = [[[11, 12], [40]], [[7, 8, 9], [300], [301, 302]]]
    boxes, scores, labels, keep = detect(model, images, text_queries)
    print("boxes", tuple(boxes.shape), "kept per image", keep.sum(dim=1).tolist())


if __name__ == "__main__":
    main()
