"""Text classification with a custom collate_fn that returns a dict holding tensors and
plain Python values (lengths as a list, example ids as strings)."""

import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader

VOCAB = ["<pad>", "good", "great", "fine", "bad", "awful", "poor", "the", "movie", "was", "plot"]
POSITIVE, NEGATIVE = {"good", "great", "fine"}, {"bad", "awful", "poor"}
word2id = {w: i for i, w in enumerate(VOCAB)}


def make_reviews(n, seed):
    rng = random.Random(seed)
    reviews = []
    for k in range(n):
        label = k % 2
        pool = sorted(POSITIVE if label else NEGATIVE)
        words = ["the", rng.choice(["movie", "plot"]), "was"] + rng.sample(pool, rng.randint(1, 3))
        reviews.append({"id": f"review-{k}", "text": " ".join(words), "label": label})
    return reviews


def collate_reviews(examples):
    token_ids = [[word2id[w] for w in ex["text"].split()] for ex in examples]
    lengths = [len(ids) for ids in token_ids]
    max_len = max(lengths)
    input_ids = torch.zeros(len(examples), max_len, dtype=torch.long)
    attention_mask = torch.zeros(len(examples), max_len)
    for row, ids in enumerate(token_ids):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        attention_mask[row, : len(ids)] = 1.0
    return {
        "input_ids": input_ids,
        "attention_mask": attention_mask,
        "labels": torch.tensor([ex["label"] for ex in examples]),
        "lengths": lengths,
        "ids": [ex["id"] for ex in examples],
    }


class MeanPoolClassifier(nn.Module):
    def __init__(self, vocab_size, dim=16):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.classifier = nn.Linear(dim, 2)

    def forward(self, input_ids, attention_mask):
        emb = self.embedding(input_ids) * attention_mask.unsqueeze(-1)
        pooled = emb.sum(dim=1) / attention_mask.sum(dim=1, keepdim=True)
        return self.classifier(pooled)


def main():
    torch.manual_seed(4)
    train_loader = DataLoader(make_reviews(96, 0), batch_size=12, shuffle=True, collate_fn=collate_reviews)
    val_loader = DataLoader(make_reviews(24, 1), batch_size=12, collate_fn=collate_reviews)
    model = MeanPoolClassifier(len(VOCAB))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(3):
        model.train()
        for batch in train_loader:
            optimizer.zero_grad()
            logits = model(batch["input_ids"], batch["attention_mask"])
            loss = loss_fn(logits, batch["labels"])
            loss.backward()
            optimizer.step()
    model.eval()
    total, n_tokens, wrong = 0.0, 0, []
    with torch.no_grad():
        for batch in val_loader:
            logits = model(batch["input_ids"], batch["attention_mask"])
            total += loss_fn(logits, batch["labels"]).item() * len(batch["ids"])
            n_tokens += sum(batch["lengths"])
            for example_id, pred, label in zip(batch["ids"], logits.argmax(1).tolist(), batch["labels"].tolist()):
                if pred != label:
                    wrong.append(example_id)
    print(f"{n_tokens} validation tokens, misclassified: {wrong}")
    print(f"final loss {total / 24:.8f}")


if __name__ == "__main__":
    main()
