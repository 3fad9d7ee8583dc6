# source: https://github.com/allenai/tango/issues/154
# area: AMP
# bug: checkpoints store model, optimizer and step but not the GradScaler state, so on a GPU a resumed fp16 run restarts from the default 65536 loss scale and growth tracker instead of the calibrated ones
import os
import tempfile

import torch
import torch.nn as nn


class TrainStepConfig:
    def __init__(self, device, total_steps=8, checkpoint_every=4):
        self.device = device
        self.amp = device.type == "cuda"
        self.total_steps = total_steps
        self.checkpoint_every = checkpoint_every
        self.lr = 3e-4


class TextClassifier(nn.Module):
    def __init__(self, vocab=500, dim=64, classes=3):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, classes))

    def forward(self, tokens):
        return self.mlp(self.emb(tokens))


class TorchTrainStep:
    def __init__(self, cfg, work_dir):
        self.cfg = cfg
        self.work_dir = work_dir
        self.model = TextClassifier().to(cfg.device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=cfg.amp)
        self.step = 0

    def _ckpt_path(self):
        return os.path.join(self.work_dir, "last.pt")

    def save_checkpoint(self):
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(), "step": self.step}  # expect[ck]: any
        torch.save(state, self._ckpt_path())

    def maybe_resume(self):
        if not os.path.exists(self._ckpt_path()):
            return
        state = torch.load(self._ckpt_path(), map_location=self.cfg.device)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = state["step"]  # expect[ck]: any

    def batch(self):
        tokens = torch.randint(0, 500, (16, 12), device=self.cfg.device)
        labels = tokens[:, 0] % 3
        return tokens, labels

    def run(self, stop_at=None):
        self.maybe_resume()
        stop_at = stop_at or self.cfg.total_steps
        while self.step < stop_at:
            tokens, labels = self.batch()
            self.optimizer.zero_grad(set_to_none=True)
            with torch.autocast(device_type=self.cfg.device.type, dtype=torch.float16, enabled=self.cfg.amp):
                loss = nn.functional.cross_entropy(self.model(tokens), labels)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.step += 1
            if self.step % self.cfg.checkpoint_every == 0:
                self.save_checkpoint()
        return loss.detach()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = TrainStepConfig(device)
    with tempfile.TemporaryDirectory() as work_dir:
        first = TorchTrainStep(cfg, work_dir)
        first.run(stop_at=cfg.checkpoint_every)
        resumed = TorchTrainStep(cfg, work_dir)
        final_loss = resumed.run()
        print("resumed at step", cfg.checkpoint_every, "finished at", resumed.step, "loss", float(final_loss))


if __name__ == "__main__":
    main()
