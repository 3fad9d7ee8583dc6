# source: https://github.com/hiyouga/ChatGLM-Efficient-Tuning/issues/175
# area: AMP
# bug: with gradient accumulation the trainer unscales and clips on every micro-batch, so on a GPU the second micro-batch raises "unscale_() has already been called on this optimizer since the last update()"
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class FinetuneArguments:
    per_device_train_batch_size: int = 4
    gradient_accumulation_steps: int = 4
    learning_rate: float = 5e-4
    max_grad_norm: float = 1.0
    num_train_epochs: int = 1
    fp16: bool = True
    lora_rank: int = 8


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int, alpha: float = 16.0):
        super().__init__()
        self.base = base
        self.base.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.randn(rank, base.in_features) * 0.01)
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_a.t() @ self.lora_b.t()) * self.scaling


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=300, dim=64, rank=8):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.embed.requires_grad_(False)
        self.query = LoRALinear(nn.Linear(dim, dim), rank)
        self.value = LoRALinear(nn.Linear(dim, dim), rank)
        self.ln = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.requires_grad_(False)

    def forward(self, input_ids, labels):
        h = self.embed(input_ids)
        attn = torch.softmax(self.query(h) @ h.transpose(1, 2) / h.shape[-1] ** 0.5, dim=-1)
        h = self.ln(h + attn @ self.value(h))
        logits = self.lm_head(h)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1), ignore_index=-100)


class SFTTrainer:
    def __init__(self, model, args: FinetuneArguments, device):
        self.model, self.args, self.device = model, args, device
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=args.learning_rate)
        self.use_amp = args.fp16 and device.type == "cuda"
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def _micro_batches(self, dataset):
        bs = self.args.per_device_train_batch_size
        for i in range(0, dataset.shape[0] - bs + 1, bs):
            yield dataset[i:i + bs]

    def train(self, dataset):
        accum = self.args.gradient_accumulation_steps
        tr_loss = torch.zeros((), device=self.device)
        grad_norms = []
        self.model.train()
        for _ in range(self.args.num_train_epochs):
            for step, batch in enumerate(self._micro_batches(dataset)):
                batch = batch.to(self.device)
                with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
                    loss = self.model(batch, batch) / accum
                self.scaler.scale(loss).backward()
                tr_loss += loss.detach()
                self.scaler.unscale_(self.optimizer)  # expect: any
                grad_norms.append(torch.nn.utils.clip_grad_norm_(self.params, self.args.max_grad_norm))
                if (step + 1) % accum == 0:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                    self.optimizer.zero_grad(set_to_none=True)
        return tr_loss, torch.stack(grad_norms)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    args = FinetuneArguments()
    model = TinyCausalLM(rank=args.lora_rank).to(device)
    dataset = torch.randint(0, 300, (64, 24))
    trainer = SFTTrainer(model, args, device)
    tr_loss, norms = trainer.train(dataset)
    n_updates = dataset.shape[0] // (args.per_device_train_batch_size * args.gradient_accumulation_steps)
    print(f"train loss {tr_loss.item() / n_updates:.4f} | mean grad norm {norms.mean().item():.4f}")


if __name__ == "__main__":
    main()
