# twin of: bugs/dm_dev06_ema_callback_resume.py
# area: device placement
# correct: the restored shadow weights are placed at fit start, after the model has moved, on each parameter's own device
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class EMACallback:
    def __init__(self, decay=0.99):
        self.decay = decay
        self.shadow = None

    def on_fit_start(self, trainer, module):
        if self.shadow is None:
            self.shadow = {n: p.detach().clone() for n, p in module.named_parameters()}
        else:
            self.shadow = {n: self.shadow[n].to(p.device) for n, p in module.named_parameters()}

    @torch.no_grad()
    def on_train_batch_end(self, trainer, module):
        for n, p in module.named_parameters():
            self.shadow[n].lerp_(p.detach(), 1.0 - self.decay)

    @torch.no_grad()
    def swap(self, module):
        for n, p in module.named_parameters():
            tmp = p.detach().clone()
            p.copy_(self.shadow[n])
            self.shadow[n].copy_(tmp)

    def state_dict(self):
        return {"decay": self.decay, "shadow": {k: v.cpu() for k, v in self.shadow.items()}}

    def load_state_dict(self, state, module):
        self.decay = state["decay"]
        self.shadow = dict(state["shadow"])


class MiniTrainer:
    def __init__(self, callbacks, max_steps, device):
        self.callbacks = callbacks
        self.max_steps = max_steps
        self.device = device

    def fit(self, module, batches, ckpt_path=None):
        optim_state = None
        if ckpt_path is not None:
            ckpt = torch.load(ckpt_path, map_location="cpu")
            module.load_state_dict(ckpt["model"])
            optim_state = ckpt["optim"]
            for cb in self.callbacks:
                cb.load_state_dict(ckpt["callbacks"][type(cb).__name__], module)
        module.to(self.device)
        optimizer = torch.optim.Adam(module.parameters(), lr=1e-2)
        if optim_state is not None:
            optimizer.load_state_dict(optim_state)
        for cb in self.callbacks:
            cb.on_fit_start(self, module)
        module.train()
        for step in range(self.max_steps):
            x, y = batches[step % len(batches)]
            x, y = x.to(self.device), y.to(self.device)
            loss = F.mse_loss(module(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            for cb in self.callbacks:
                cb.on_train_batch_end(self, module)
        return optimizer

    def save(self, path, module, optimizer):
        torch.save({
            "model": module.state_dict(),
            "optim": optimizer.state_dict(),
            "callbacks": {type(cb).__name__: cb.state_dict() for cb in self.callbacks},
        }, path)


@torch.no_grad()
def validate(module, batches, ema):
    ema.swap(module)
    module.eval()
    total = sum(F.mse_loss(module(x.to(device)), y.to(device)) for x, y in batches)
    ema.swap(module)
    return total / len(batches)


def main():
    torch.manual_seed(0)
    batches = [(torch.randn(32, 10), torch.randn(32, 1)) for _ in range(8)]
    path = os.path.join(tempfile.mkdtemp(), "last.ckpt")

    ema = EMACallback()
    trainer = MiniTrainer([ema], max_steps=30, device=device)
    model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 1))
    opt = trainer.fit(model, batches)
    trainer.save(path, model, opt)

    ema2 = EMACallback()
    trainer2 = MiniTrainer([ema2], max_steps=30, device=device)
    model2 = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 1))
    trainer2.fit(model2, batches, ckpt_path=path)
    print(f"EMA val loss after resume: {validate(model2, batches, ema2).item():.4f}")


if __name__ == "__main__":
    main()
