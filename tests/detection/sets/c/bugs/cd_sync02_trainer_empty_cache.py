# source: https://github.com/huggingface/transformers/issues/31372
# area: transfer & sync
# bug: torch.cuda.empty_cache() after every training step synchronizes the device and forces the allocator to re-cudaMalloc each step
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class TrainingArguments:
    def __init__(self, per_device_train_batch_size=16, num_train_epochs=2, learning_rate=5e-4,
                 logging_steps=10, max_grad_norm=1.0):
        self.per_device_train_batch_size = per_device_train_batch_size
        self.num_train_epochs = num_train_epochs
        self.learning_rate = learning_rate
        self.logging_steps = logging_steps
        self.max_grad_norm = max_grad_norm


class CausalMLP(nn.Module):
    def __init__(self, vocab=256, hidden=96, ctx=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.mix = nn.Sequential(nn.Linear(hidden * ctx, hidden * 2), nn.GELU(),
                                 nn.Linear(hidden * 2, vocab))

    def forward(self, input_ids, labels=None):
        h = self.emb(input_ids).flatten(1)
        logits = self.mix(h)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels)
        return loss, logits


class Trainer:
    def __init__(self, model, args, train_dataset):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.train_dataset = train_dataset
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.learning_rate)
        self.log_history = []

    def get_train_dataloader(self):
        return DataLoader(self.train_dataset, batch_size=self.args.per_device_train_batch_size,
                          shuffle=True, pin_memory=torch.cuda.is_available())

    def training_step(self, inputs):
        self.model.train()
        inputs = {k: v.to(self.device, non_blocking=True) for k, v in inputs.items()}
        loss, _ = self.model(**inputs)
        loss.backward()
        torch.cuda.empty_cache()  # expect: any
        return loss.detach()

    def train(self):
        loader = self.get_train_dataloader()
        tr_loss = torch.zeros((), device=self.device)
        global_step = 0
        for epoch in range(self.args.num_train_epochs):
            for input_ids, labels in loader:
                tr_loss += self.training_step({"input_ids": input_ids, "labels": labels})
                nn.utils.clip_grad_norm_(self.model.parameters(), self.args.max_grad_norm)
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                global_step += 1
                if global_step % self.args.logging_steps == 0:
                    self.log_history.append((global_step, tr_loss / self.args.logging_steps))
                    tr_loss = torch.zeros((), device=self.device)
        for step, loss in self.log_history:
            print(f"step {step}: loss {loss.item():.4f}")
        return global_step


def build_dataset(n=320, ctx=16, vocab=256):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (n, ctx), generator=g)
    labels = (ids.sum(dim=1) % vocab)
    return TensorDataset(ids, labels)


if __name__ == "__main__":
    args = TrainingArguments()
    trainer = Trainer(CausalMLP(), args, build_dataset())
    steps = trainer.train()
    print("finished", steps, "steps")
