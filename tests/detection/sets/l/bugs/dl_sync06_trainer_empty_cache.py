# source: https://github.com/huggingface/transformers/pull/31530
# area: transfer & sync
# bug: training_step calls torch.cuda.empty_cache() after every step, which synchronises the device and throws away the allocator cache each iteration
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class TrainingArguments:
    learning_rate: float = 3e-4
    per_device_train_batch_size: int = 16
    num_train_epochs: int = 2
    max_grad_norm: float = 1.0
    logging_steps: int = 10


class TinyCausalLM(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, input_ids, labels=None):
        T = input_ids.size(1)
        pos = torch.arange(T, device=input_ids.device)
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=input_ids.device)
        h = self.blocks(self.tok(input_ids) + self.pos(pos), mask=mask, is_causal=True)
        logits = self.lm_head(h)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
        return logits, loss


class Trainer:
    def __init__(self, model, args, train_dataset):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.train_dataset = train_dataset
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.learning_rate)

    def get_train_dataloader(self):
        return torch.utils.data.DataLoader(
            self.train_dataset, batch_size=self.args.per_device_train_batch_size, shuffle=True, drop_last=True
        )

    def training_step(self, batch):
        self.model.train()
        input_ids = batch.to(self.device)
        _, loss = self.model(input_ids, labels=input_ids)
        loss.backward()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # expect: any
        return loss.detach()

    def train(self):
        step = 0
        tr_loss = torch.zeros((), device=self.device)
        for epoch in range(self.args.num_train_epochs):
            for batch in self.get_train_dataloader():
                tr_loss += self.training_step(batch)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                step += 1
                if step % self.args.logging_steps == 0:
                    print(f"step {step}: loss {(tr_loss / self.args.logging_steps).item():.4f}")
                    tr_loss.zero_()
        return step


def main():
    torch.manual_seed(0)
    data = torch.randint(0, 256, (320, 32))
    trainer = Trainer(TinyCausalLM(), TrainingArguments(), data)
    print("finished after", trainer.train(), "steps")


if __name__ == "__main__":
    main()
