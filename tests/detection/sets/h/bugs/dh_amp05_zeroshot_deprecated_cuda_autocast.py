# source: https://github.com/LAION-AI/CLIP_benchmark/issues/136
# area: AMP
# bug: zero-shot evaluation wraps the forward in the deprecated torch.cuda.amp.autocast, which on a GPU emits a FutureWarning each time the classifier is built and is slated for removal; torch.autocast("cuda", ...) is the supported API
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyCLIP(nn.Module):
    def __init__(self, embed_dim=64, vocab=100, ctx_len=8):
        super().__init__()
        self.visual = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.GELU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.GELU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, embed_dim),
        )
        self.token_embedding = nn.Embedding(vocab, embed_dim)
        self.pos = nn.Parameter(torch.zeros(ctx_len, embed_dim))
        self.text_proj = nn.Linear(embed_dim, embed_dim)
        self.logit_scale = nn.Parameter(torch.tensor(4.6052))

    def encode_image(self, images):
        return self.visual(images)

    def encode_text(self, tokens):
        x = self.token_embedding(tokens) + self.pos
        return self.text_proj(x.mean(dim=1))


def tokenize(prompts, ctx_len=8, vocab=100):
    out = torch.zeros(len(prompts), ctx_len, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids = [(sum(map(ord, w)) % (vocab - 1)) + 1 for w in p.split()][:ctx_len]
        out[i, : len(ids)] = torch.tensor(ids)
    return out


def zero_shot_classifier(model, classnames, templates, device, amp):
    with torch.no_grad(), torch.cuda.amp.autocast(enabled=amp):  # expect: any
        weights = []
        for name in classnames:
            tokens = tokenize([t.format(name) for t in templates]).to(device)
            emb = F.normalize(model.encode_text(tokens), dim=-1).mean(dim=0)
            weights.append(emb / emb.norm())
        return torch.stack(weights, dim=1)


def run_classification(model, classifier, loader, device, amp):
    correct = torch.zeros((), dtype=torch.long, device=device)
    seen = 0
    with torch.no_grad():
        for images, target in loader:
            images = images.to(device, non_blocking=True)
            target = target.to(device, non_blocking=True)
            with torch.autocast(device_type=device.type, enabled=amp):
                feats = F.normalize(model.encode_image(images), dim=-1)
                logits = model.logit_scale.exp() * feats @ classifier
            correct += (logits.argmax(dim=-1) == target).sum()
            seen += target.numel()
    return correct.item() / seen


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    amp = device.type == "cuda"
    torch.manual_seed(0)
    model = TinyCLIP().to(device).eval()
    classnames = ["cat", "dog", "car", "plane", "ship"]
    templates = ["a photo of a {}.", "a blurry photo of a {}.", "a drawing of the {}."]
    images = torch.randn(40, 3, 32, 32)
    labels = torch.randint(0, len(classnames), (40,))
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(images, labels), batch_size=8, pin_memory=amp
    )
    classifier = zero_shot_classifier(model, classnames, templates, device, amp)
    acc1 = run_classification(model, classifier, loader, device, amp)
    print(f"zero-shot top-1: {acc1:.3f}")


if __name__ == "__main__":
    main()
