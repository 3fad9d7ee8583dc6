# source: https://github.com/deepspeedai/DeepSpeed/issues/5701
# area: dtype
# bug: on the GPU the batch helper casts every tensor to the fp16 model dtype, including input_ids and labels, so the embedding lookup and the loss receive float16 indices
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class EvalConfig:
    vocab_size: int = 1000
    hidden: int = 64
    num_labels: int = 4
    num_meta: int = 3
    batch_size: int = 8


class TextWithMetaClassifier(nn.Module):
    def __init__(self, cfg: EvalConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.meta_proj = nn.Linear(cfg.num_meta, cfg.hidden)
        self.encoder = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)
        self.head = nn.Linear(2 * cfg.hidden, cfg.num_labels)

    def forward(self, input_ids, attention_mask, meta_features, labels=None):
        h, _ = self.encoder(self.embed(input_ids))
        m = attention_mask.unsqueeze(-1)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1)
        logits = self.head(torch.cat([pooled, self.meta_proj(meta_features)], dim=-1))
        loss = F.cross_entropy(logits.float(), labels) if labels is not None else None
        return loss, logits


def prepare_inputs(batch, device, dtype=None):
    return {k: v.to(device=device, dtype=dtype) for k, v in batch.items()}  # expect: any


def make_eval_set(cfg, n=40, max_len=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    batches = []
    for start in range(0, n, cfg.batch_size):
        b = min(cfg.batch_size, n - start)
        lengths = torch.randint(5, max_len + 1, (b,), generator=g)
        ids = torch.randint(1, cfg.vocab_size, (b, max_len), generator=g)
        mask = (torch.arange(max_len)[None, :] < lengths[:, None]).float()
        batches.append({
            "input_ids": ids * mask.long(),
            "attention_mask": mask,
            "meta_features": torch.randn(b, cfg.num_meta, generator=g),
            "labels": ids[:, 0] % cfg.num_labels,
        })
    return batches


@torch.no_grad()
def evaluate(model, batches, device, dtype):
    model.eval()
    total_loss = torch.zeros((), device=device)
    correct = torch.zeros((), device=device, dtype=torch.long)
    seen = 0
    for batch in batches:
        inputs = prepare_inputs(batch, device, dtype)
        loss, logits = model(**inputs)
        total_loss += loss * logits.shape[0]
        correct += (logits.argmax(-1) == inputs["labels"]).sum()
        seen += logits.shape[0]
    return {"loss": total_loss.item() / seen, "accuracy": correct.item() / seen}


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model_dtype = torch.float16 if device.type == "cuda" else None
    cfg = EvalConfig()
    torch.manual_seed(0)
    model = TextWithMetaClassifier(cfg).to(device=device, dtype=model_dtype)
    metrics = evaluate(model, make_eval_set(cfg), device, model_dtype)
    print(f"eval loss {metrics['loss']:.4f}  accuracy {metrics['accuracy']:.3f}")


if __name__ == "__main__":
    main()
