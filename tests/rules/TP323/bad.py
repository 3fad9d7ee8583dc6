import torch


def train(model, loader, optimizer, accum=4):
    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


class Trainer:
    def __init__(self, model, optimizer, accum=4):
        self.model, self.optimizer, self.accum = model, optimizer, accum
        self.scaler = torch.amp.GradScaler("cuda")

    def micro_step(self, i, x, y):
        loss = torch.nn.functional.mse_loss(self.model(x), y) / self.accum
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        if (i + 1) % self.accum == 0:
            self.scaler.step(self.optimizer)
            self.scaler.update()


class Trainer:
    def __init__(self, model, optimizer, accum):
        self.model, self.optimizer, self.accum = model, optimizer, accum
        self.scaler = torch.amp.GradScaler("cuda")

    def _clip(self):
        self.scaler.unscale_(self.optimizer)
        return torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)

    def train(self, batches):
        for i, (x, y) in enumerate(batches):
            loss = torch.nn.functional.mse_loss(self.model(x), y) / self.accum
            self.scaler.scale(loss).backward()
            self._clip()
            if (i + 1) % self.accum == 0:
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
