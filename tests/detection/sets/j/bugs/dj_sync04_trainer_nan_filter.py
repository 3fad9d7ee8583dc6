# source: https://github.com/huggingface/transformers/pull/44123
# area: transfer & sync
# bug: the NaN/Inf logging filter evaluates device tensors in a Python `or`/`if`, forcing a device->host sync on every training step
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class TrainingArguments:
    num_train_epochs: int = 2
    per_device_train_batch_size: int = 32
    learning_rate: float = 3e-4
    max_grad_norm: float = 1.0
    logging_nan_inf_filter: bool = True


class TextClassifier(nn.Module):
    def __init__(self, vocab_size=2000, dim=64, num_labels=3):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.classifier = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, num_labels))

    def forward(self, input_ids, labels=None):
        logits = self.classifier(self.embed(input_ids))
        loss = None if labels is None else nn.functional.cross_entropy(logits, labels)
        return loss, logits


class Trainer:
    def __init__(self, model, args, train_dataset):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.train_dataset = train_dataset
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.learning_rate)
        self.global_step = 0
        self._globalstep_last_logged = 0
        self.log_history = []

    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=self.args.per_device_train_batch_size, shuffle=True)

    def training_step(self, batch):
        input_ids, labels = (t.to(self.device) for t in batch)
        loss, _ = self.model(input_ids, labels=labels)
        loss.backward()
        return loss.detach()

    def _log(self, tr_loss):
        steps = self.global_step - self._globalstep_last_logged
        self.log_history.append({"step": self.global_step, "loss": round(tr_loss.item() / steps, 4)})
        self._globalstep_last_logged = self.global_step
        print(self.log_history[-1])

    def train(self):
        loader = self.get_train_dataloader()
        self.model.train()
        for _ in range(self.args.num_train_epochs):
            tr_loss = torch.zeros((), device=self.device)
            for batch in loader:
                tr_loss_step = self.training_step(batch)
                if self.args.logging_nan_inf_filter and (torch.isnan(tr_loss_step) or torch.isinf(tr_loss_step)):  # expect: any
                    tr_loss = tr_loss + tr_loss / (1 + self.global_step - self._globalstep_last_logged)
                else:
                    tr_loss = tr_loss + tr_loss_step
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.global_step += 1
            self._log(tr_loss)
        return self.log_history


def build_dataset(n=512, seq_len=24, vocab_size=2000, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab_size, (n, seq_len), generator=g)
    labels = (ids[:, :4].sum(dim=1) % 3).long()
    return TensorDataset(ids, labels)


if __name__ == "__main__":
    torch.manual_seed(0)
    trainer = Trainer(TextClassifier(), TrainingArguments(), build_dataset())
    trainer.train()
