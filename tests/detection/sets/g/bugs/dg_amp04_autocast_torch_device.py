# source: https://github.com/mosaicml/llm-foundry/pull/302
# area: AMP
# bug: the evaluator passes a torch.device object (cuda:0) as autocast's device_type, which only accepts the type string 'cuda', so every GPU eval crashes with a ValueError while the CPU path takes the nullcontext branch
import math
from contextlib import nullcontext
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class EvalConfig:
    precision: str = "amp_bf16"
    vocab_size: int = 96
    d_model: int = 48
    seq_len: int = 24
    batch_size: int = 8
    n_batches: int = 4


_PRECISION_DTYPES = {"amp_bf16": torch.bfloat16, "amp_fp16": torch.float16}


def get_autocast_context(device: torch.device, precision: str):
    if device.type != "cuda" or precision not in _PRECISION_DTYPES:
        return nullcontext()
    return torch.autocast(device, dtype=_PRECISION_DTYPES[precision])  # expect: any


class GRULanguageModel(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.rnn = nn.GRU(d_model, d_model, num_layers=2, batch_first=True)
        self.proj = nn.Linear(d_model, vocab_size)

    def forward(self, ids):
        h, _ = self.rnn(self.embed(ids))
        return self.proj(h)


class PerplexityEvaluator:
    def __init__(self, model, cfg: EvalConfig, device: torch.device):
        self.model = model
        self.cfg = cfg
        self.device = device

    @torch.inference_mode()
    def evaluate(self, batches):
        self.model.eval()
        nll_sum = torch.zeros((), device=self.device, dtype=torch.float64)
        n_tokens = 0
        for batch in batches:
            batch = batch.to(self.device)
            inputs, targets = batch[:, :-1], batch[:, 1:]
            with get_autocast_context(self.device, self.cfg.precision):
                logits = self.model(inputs)
            nll = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="sum")
            nll_sum += nll.double()
            n_tokens += targets.numel()
        return math.exp(nll_sum.item() / n_tokens)


def make_eval_batches(cfg):
    g = torch.Generator().manual_seed(3)
    return [torch.randint(0, cfg.vocab_size, (cfg.batch_size, cfg.seq_len + 1), generator=g) for _ in range(cfg.n_batches)]


if __name__ == "__main__":
    torch.manual_seed(0)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    cfg = EvalConfig()
    model = GRULanguageModel(cfg.vocab_size, cfg.d_model).to(device)
    evaluator = PerplexityEvaluator(model, cfg, device)
    print(f"eval perplexity: {evaluator.evaluate(make_eval_batches(cfg)):.2f}")
