# source: https://github.com/haoyangzheng-ai/didi-instruct/issues/1
# area: device placement
# bug: the padding mask used as metric weight stays on the CPU while the NLLs and the metric state live on the GPU
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
VOCAB, PAD = 128, 0


class GenPerplexity:
    """Running weighted mean of token NLLs, reported as perplexity."""

    def __init__(self):
        self.mean_value = torch.zeros(())
        self.weight = torch.zeros(())

    def to(self, dev):
        self.mean_value = self.mean_value.to(dev)
        self.weight = self.weight.to(dev)
        return self

    def update(self, value, weight):
        self.mean_value += value.sum()
        self.weight += weight.sum()

    def compute(self):
        return torch.exp(self.mean_value / self.weight.clamp_min(1.0))

    def reset(self):
        self.mean_value.zero_()
        self.weight.zero_()


class EvalLM(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, VOCAB)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.head(h)


def retokenize(samples, max_len=24):
    ids = torch.full((len(samples), max_len), PAD, dtype=torch.long)
    mask = torch.zeros(len(samples), max_len, dtype=torch.long)
    for i, s in enumerate(samples):
        s = s[:max_len]
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return {"input_ids": ids, "attention_mask": mask}


@torch.no_grad()
def log_generative_perplexity(eval_model, samples, metric, batch_size=8):
    eval_model.eval()
    metric.reset()
    for start in range(0, len(samples), batch_size):
        batch = retokenize(samples[start : start + batch_size])
        ids = batch["input_ids"].to(device)
        logits = eval_model(ids[:, :-1])
        nlls = F.cross_entropy(
            logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1), reduction="none"
        ).view(ids.size(0), -1)
        valid_tokens = batch["attention_mask"][:, 1:].float()  # expect: any
        metric.update(nlls * valid_tokens, valid_tokens)
    return metric.compute()


def main():
    torch.manual_seed(0)
    eval_model = EvalLM().to(device)
    gen_ppl = GenPerplexity().to(device)
    g = torch.Generator().manual_seed(1)
    samples = []
    for _ in range(32):
        n = int(torch.randint(6, 24, (1,), generator=g))
        samples.append(torch.randint(1, VOCAB, (n,), generator=g).tolist())
    ppl = log_generative_perplexity(eval_model, samples, gen_ppl)
    print(f"gen ppl: {ppl.item():.2f} (uniform would be {math.exp(math.log(VOCAB)):.0f})")


if __name__ == "__main__":
    main()
