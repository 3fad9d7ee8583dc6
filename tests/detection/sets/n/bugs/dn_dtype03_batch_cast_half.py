# source: https://github.com/huu4ontocord/MDEL/issues/44
# area: dtype
# bug: the batch-to-device helper casts every tensor of the batch to fp16 when running on CUDA, so input_ids/labels reach the embedding and the loss as HalfTensor
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
USE_FP16 = device.type == "cuda"
PAD_ID = 0
VOCAB = 500


class TokenizedCorpus(Dataset):
    def __init__(self, n, max_len=24, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.samples = []
        for _ in range(n):
            length = int(torch.randint(6, max_len, (1,), generator=g))
            self.samples.append(torch.randint(1, VOCAB, (length,), generator=g))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        ids = self.samples[i]
        return {"input_ids": ids[:-1], "labels": ids[1:]}


class PadCollator:
    def __init__(self, pad_id=PAD_ID, label_pad=-100):
        self.pad_id = pad_id
        self.label_pad = label_pad

    def __call__(self, features):
        longest = max(f["input_ids"].numel() for f in features)
        ids = torch.full((len(features), longest), self.pad_id, dtype=torch.long)
        labels = torch.full((len(features), longest), self.label_pad, dtype=torch.long)
        mask = torch.zeros((len(features), longest), dtype=torch.long)
        for row, f in enumerate(features):
            n = f["input_ids"].numel()
            ids[row, :n] = f["input_ids"]
            labels[row, :n] = f["labels"]
            mask[row, :n] = 1
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def move_batch(batch, device, fp16):
    out = {}
    for key, value in batch.items():
        value = value.to(device)
        if fp16:
            value = value.half()  # expect: any
        out[key] = value
    return out


class TinyLM(nn.Module):
    def __init__(self, vocab=VOCAB, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, padding_idx=PAD_ID)
        self.mixer = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, input_ids, attention_mask, labels=None):
        h = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        h, _ = self.mixer(h)
        logits = self.head(h)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)
        return loss, logits


def main():
    torch.manual_seed(0)
    loader = DataLoader(TokenizedCorpus(48), batch_size=16, shuffle=True, collate_fn=PadCollator())
    model = TinyLM().to(device)
    if USE_FP16:
        model = model.half()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    running = torch.zeros((), device=device)
    for step, batch in enumerate(loader):
        batch = move_batch(batch, device, USE_FP16)
        loss, _ = model(**batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
    print(f"mean loss over {step + 1} steps: {(running / (step + 1)).item():.4f}")


if __name__ == "__main__":
    main()
