import torch


def train(model, loader, optimizer, accum=4):
    scaler = torch.amp.GradScaler("cuda")
    for i, (x, y) in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y) / accum
        scaler.scale(loss).backward()
        if (i + 1) % accum == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()


def train_every_step(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        scaler.scale(torch.nn.functional.mse_loss(model(x), y)).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()


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
            if (i + 1) % self.accum == 0:
                self._clip()
                self.scaler.step(self.optimizer)
                self.scaler.update()
                self.optimizer.zero_grad()
