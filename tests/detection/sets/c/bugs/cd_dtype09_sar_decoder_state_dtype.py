# source: https://github.com/mindee/doctr/issues/1441
# area: dtype
# bug: the decoder's LSTM states are created in forward as float32 zeros, so after model.half() on GPU the LSTMCell mixes half inputs with float states
import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = "0123456789abcdefghijklmnopqrstuvwxyz"


class Backbone(nn.Module):
    def __init__(self, ch=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(ch, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU(),
        )

    def forward(self, x):
        return self.body(x)


class AttentionDecoder(nn.Module):
    def __init__(self, feat_ch, hidden, vocab_size, max_len):
        super().__init__()
        self.hidden = hidden
        self.max_len = max_len
        self.sos = vocab_size
        self.embed = nn.Embedding(vocab_size + 1, hidden)
        self.cell = nn.LSTMCell(hidden, hidden)
        self.query = nn.Linear(hidden, feat_ch)
        self.key = nn.Conv2d(feat_ch, feat_ch, 1)
        self.score = nn.Conv2d(feat_ch, 1, 1)
        self.cls = nn.Linear(hidden + feat_ch, vocab_size)

    def forward(self, features, holistic):
        b = features.size(0)
        h = torch.zeros(b, self.hidden, device=features.device)  # expect[w]: any
        c = torch.zeros(b, self.hidden, device=features.device)  # expect[w]: any
        h, c = self.cell(holistic, (h, c))
        symbol = torch.full((b,), self.sos, dtype=torch.long, device=features.device)
        keys = self.key(features)
        logits = []
        for _ in range(self.max_len):
            h, c = self.cell(self.embed(symbol), (h, c))
            att = self.score(torch.tanh(keys + self.query(h)[:, :, None, None]))
            att = F.softmax(att.flatten(1), dim=1).view_as(att)
            glimpse = (features * att).sum(dim=(2, 3))
            step_logits = self.cls(torch.cat([h, glimpse], dim=1))
            logits.append(step_logits)
            symbol = step_logits.argmax(dim=1)
        return torch.stack(logits, dim=1)


class SARRecognizer(nn.Module):
    def __init__(self, vocab=VOCAB, hidden=128, max_len=12):
        super().__init__()
        self.vocab = vocab
        self.backbone = Backbone()
        self.holistic = nn.Linear(64, hidden)
        self.decoder = AttentionDecoder(64, hidden, len(vocab), max_len)

    def forward(self, images):
        feats = self.backbone(images)
        holistic = self.holistic(feats.amax(dim=(2, 3)))
        return self.decoder(feats, holistic)

    def decode(self, logits):
        return ["".join(self.vocab[i] for i in row) for row in logits.argmax(-1).tolist()]


def load_crops(n=6, h=32, w=128):
    gen = torch.Generator().manual_seed(0)
    return torch.rand(n, 3, h, w, generator=gen)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = SARRecognizer().eval().to(device)
    if device.type == "cuda":
        model = model.half()
    dtype = next(model.parameters()).dtype
    crops = load_crops().to(device=device, dtype=dtype)
    with torch.no_grad():
        logits = model(crops)
    for word in model.decode(logits.float().cpu()):
        print(word)


if __name__ == "__main__":
    main()
