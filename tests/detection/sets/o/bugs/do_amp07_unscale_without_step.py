# source: https://github.com/huggingface/transformers/issues/23935
# area: AMP
# bug: gradients are unscaled/clipped on a global accumulation counter but the scaler only steps on a per-epoch counter, so after an epoch boundary unscale_ runs twice without update() and raises on the GPU
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class TrainingArguments:
    num_train_epochs = 3
    per_device_train_batch_size = 8
    gradient_accumulation_steps = 4
    max_grad_norm = 1.0
    learning_rate = 5e-4
    fp16 = True


class SentencePairModel(nn.Module):
    def __init__(self, vocab=300, dim=48):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.enc = nn.TransformerEncoderLayer(dim, nhead=4, dim_feedforward=96, batch_first=True)
        self.cls = nn.Linear(dim, 2)

    def forward(self, input_ids, labels):
        h = self.enc(self.emb(input_ids)).mean(dim=1)
        logits = self.cls(h)
        return F.cross_entropy(logits, labels), logits


class Trainer:
    def __init__(self, model, args, dataset):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.use_amp = args.fp16 and self.device.type == "cuda"
        self.model = model.to(self.device)
        self.loader = DataLoader(dataset, batch_size=args.per_device_train_batch_size, shuffle=True,
                                 pin_memory=self.device.type == "cuda")
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.learning_rate)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def _sync_gradients(self, step_in_epoch, steps_in_epoch):
        accum = self.args.gradient_accumulation_steps
        return (step_in_epoch + 1) % accum == 0 or step_in_epoch + 1 == steps_in_epoch

    def train(self):
        args = self.args
        total_batched_samples = 0
        tr_loss = torch.zeros((), device=self.device)
        for epoch in range(args.num_train_epochs):
            steps_in_epoch = len(self.loader)
            for step, (input_ids, labels) in enumerate(self.loader):
                total_batched_samples += 1
                input_ids = input_ids.to(self.device, non_blocking=True)
                labels = labels.to(self.device, non_blocking=True)
                with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
                    loss, _ = self.model(input_ids, labels)
                loss = loss / args.gradient_accumulation_steps
                self.scaler.scale(loss).backward()
                tr_loss += loss.detach()
                if total_batched_samples % args.gradient_accumulation_steps == 0 or step + 1 == steps_in_epoch:  # expect[acc]: any
                    self.scaler.unscale_(self.optimizer)  # expect[acc]: any
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
                    if self._sync_gradients(step, steps_in_epoch):
                        self.scaler.step(self.optimizer)
                        self.scaler.update()
                        self.optimizer.zero_grad(set_to_none=True)
            print(f"epoch {epoch} accumulated loss {tr_loss.item():.4f}")
            tr_loss.zero_()


def main():
    ids = torch.randint(0, 300, (80, 16))
    labels = (ids[:, 0] > 150).long()
    Trainer(SentencePairModel(), TrainingArguments(), TensorDataset(ids, labels)).train()


if __name__ == "__main__":
    main()
