# source: https://github.com/huggingface/transformers/pull/11663
# area: AMP
# bug: checkpoints store model, optimizer, scheduler and step but not the GradScaler state, so a resumed fp16 run on a GPU restarts at the default 65536 scale, skips steps and diverges from an uninterrupted run
import os
import tempfile
import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.out(h)


class Trainer:
    def __init__(self, output_dir, device, lr=3e-3, total_steps=20):
        self.output_dir = output_dir
        self.device = device
        self.use_amp = device.type == "cuda"
        self.model = TinyLM().to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=lr)
        self.scheduler = torch.optim.lr_scheduler.LinearLR(self.optimizer, 1.0, 0.1, total_iters=total_steps)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)
        self.global_step = 0

    def training_step(self, ids):
        with torch.autocast(device_type=self.device.type, dtype=torch.float16, enabled=self.use_amp):
            logits = self.model(ids[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        self.global_step += 1
        return loss.detach()

    def checkpoint_path(self):
        return os.path.join(self.output_dir, "checkpoint-last.pt")

    def save_checkpoint(self):
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(), "step": self.global_step}  # expect[scaler]: any
        torch.save(state, self.checkpoint_path())

    def resume(self):
        state = torch.load(self.checkpoint_path(), map_location=self.device)  # expect[scaler]: any
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.global_step = state["step"]

    def train(self, data, max_steps, save_every=5):
        total = torch.zeros((), device=self.device)
        while self.global_step < max_steps:
            ids = data[self.global_step % len(data)].to(self.device)
            total += self.training_step(ids)
            if self.global_step % save_every == 0:
                self.save_checkpoint()
        return total


def make_data(n_batches=8, batch=8, seq=16, vocab=64):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, vocab, (batch, seq), generator=g) for _ in range(n_batches)]


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = make_data()
    with tempfile.TemporaryDirectory() as out:
        first = Trainer(out, device)
        first.train(data, max_steps=10)
        resumed = Trainer(out, device)
        resumed.resume()
        loss_sum = resumed.train(data, max_steps=20)
        print(f"resumed at step 10, finished at {resumed.global_step}, loss sum {loss_sum.item():.3f}")


if __name__ == "__main__":
    main()
