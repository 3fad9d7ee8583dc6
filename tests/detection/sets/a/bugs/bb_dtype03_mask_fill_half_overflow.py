# source: https://github.com/NVIDIA/apex/issues/1052
# area: dtype
# bug: attention pooling fills padded positions with -1e9; the inference path casts the model to fp16 on GPU, where -1e9 cannot be represented (RuntimeError: value cannot be converted to type at::Half without overflow)
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
VOCAB, PAD = 100, 0


def masked_attention_pool(scores, values, pad_mask):
    """scores: (B, T), values: (B, T, D), pad_mask: (B, T) True where padded."""
    scores = scores.masked_fill(pad_mask, -1e9)  # expect: any
    weights = F.softmax(scores, dim=-1)
    return torch.bmm(weights.unsqueeze(1), values).squeeze(1)


class AttnPoolClassifier(nn.Module):
    def __init__(self, vocab, dim=32, num_classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.score = nn.Linear(dim, 1)
        self.out = nn.Linear(dim, num_classes)

    def forward(self, tokens):
        h, _ = self.rnn(self.emb(tokens))
        scores = self.score(h).squeeze(-1)
        pooled = masked_attention_pool(scores, h, tokens.eq(PAD))
        return self.out(pooled)


def make_batch(bs=16, max_len=12):
    lengths = torch.randint(3, max_len + 1, (bs,))
    tokens = torch.randint(1, VOCAB, (bs, max_len))
    tokens[torch.arange(max_len).unsqueeze(0) >= lengths.unsqueeze(1)] = PAD
    return tokens, torch.randint(0, 3, (bs,))


def train(model, steps=30):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        tokens, labels = make_batch()
        loss = F.cross_entropy(model(tokens.to(device)), labels.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def load_for_inference(model):
    model.eval()
    if device.type == "cuda":
        model = model.half()  # halve latency and memory for serving
    return model


@torch.no_grad()
def evaluate(model, batches=5):
    correct = total = 0
    for _ in range(batches):
        tokens, labels = make_batch()
        logits = model(tokens.to(device))
        correct += (logits.argmax(-1).cpu() == labels).sum().item()
        total += labels.numel()
    return correct / total


model = AttnPoolClassifier(VOCAB).to(device)
print("train loss", round(train(model), 4))
served = load_for_inference(model)
print("eval acc", evaluate(served))
