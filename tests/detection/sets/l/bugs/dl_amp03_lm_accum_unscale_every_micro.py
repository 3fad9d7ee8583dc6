# source: https://github.com/pengxiao-song/LaWGPT/issues/124
# area: AMP
# bug: unscale_ and clipping run after every micro-batch while scaler.step/update only run at the accumulation boundary, so on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


@dataclass
class TrainConfig:
    vocab_size: int = 512
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    seq_len: int = 32
    micro_batch_size: int = 4
    gradient_accumulation_steps: int = 4
    max_grad_norm: float = 1.0
    learning_rate: float = 3e-4
    max_steps: int = 4
    fp16: bool = True


class TinyCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos = nn.Parameter(torch.zeros(1, cfg.seq_len, cfg.d_model))
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, 4 * cfg.d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        mask = torch.triu(torch.full((cfg.seq_len, cfg.seq_len), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, input_ids, labels):
        h = self.tok(input_ids) + self.pos[:, : input_ids.size(1)]
        h = self.blocks(h, mask=self.causal_mask, is_causal=True)
        logits = self.head(h)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))


class CausalLMTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.model = TinyCausalLM(cfg).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.learning_rate)
        total = cfg.max_steps
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
        self.use_amp = cfg.fp16 and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def micro_batches(self):
        cfg = self.cfg
        while True:
            ids = torch.randint(0, cfg.vocab_size, (cfg.micro_batch_size, cfg.seq_len), device=device)
            yield ids, ids.clone()

    def train(self):
        cfg = self.cfg
        self.model.train()
        stream = self.micro_batches()
        running = torch.zeros((), device=device)
        for step in range(cfg.max_steps * cfg.gradient_accumulation_steps):
            input_ids, labels = next(stream)
            with torch.autocast(device_type=device.type, dtype=torch.float16, enabled=self.use_amp):
                loss = self.model(input_ids, labels) / cfg.gradient_accumulation_steps
            self.scaler.scale(loss).backward()
            running += loss.detach()

            self.scaler.unscale_(self.optimizer)  # expect: any
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)

            if (step + 1) % cfg.gradient_accumulation_steps == 0:
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
        return running.item() / cfg.max_steps


if __name__ == "__main__":
    torch.manual_seed(0)
    trainer = CausalLMTrainer(TrainConfig())
    print(f"mean loss per optimizer step: {trainer.train():.4f}")
