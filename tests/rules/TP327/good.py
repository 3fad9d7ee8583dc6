import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.scaler = torch.amp.GradScaler("cuda")  # made once, before any restore

    def load_checkpoint(self, ckpt):
        self.model.load_state_dict(ckpt["model"])
        self.scaler.load_state_dict(ckpt["scaler"])

    def fit(self, batches):
        for x, y in batches:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()


class LazyTrainer:
    """Makes its scaler in a setup step that a restore follows: nothing is dropped."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def setup(self):
        self.scaler = torch.amp.GradScaler("cuda")

    def load_checkpoint(self, ckpt):
        self.scaler.load_state_dict(ckpt["scaler"])

    def fit(self, batches):
        for x, y in batches:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(self.model(x), y)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
