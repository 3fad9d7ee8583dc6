import torch
import torch.nn.functional as F


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.scaler = None

    def load_checkpoint(self, ckpt):
        self.model.load_state_dict(ckpt["model"])
        if self.scaler is not None:
            self.scaler.load_state_dict(ckpt["scaler"])

    def fit(self, batches):
        self.scaler = torch.amp.GradScaler("cuda")
        for x, y in batches:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
