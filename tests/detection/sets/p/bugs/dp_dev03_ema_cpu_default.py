# source: https://github.com/OpenRLHF/OpenRLHF/issues/245
# area: device placement
# bug: moving_average defaults to device="cpu", so actor weights are pulled to the CPU and mixed with the GPU EMA copy
import copy
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class PPOConfig:
    vocab: int = 64
    hidden: int = 64
    seq_len: int = 16
    batch_size: int = 8
    lr: float = 3e-4
    ema_beta: float = 0.992
    enable_ema: bool = True
    clip_eps: float = 0.2
    accumulated_gradient: int = 1


class TinyActor(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.hidden)
        self.rnn = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)
        self.head = nn.Linear(cfg.hidden, cfg.vocab)

    def forward(self, tokens):
        h, _ = self.rnn(self.embed(tokens))
        return self.head(h)


class SimpleStrategy:
    def __init__(self, cfg):
        self.cfg = cfg
        self.time_steps = {"ema": 0}

    def moving_average(self, model, model_ema, beta=0.992, device="cpu"):  # expect[e]: any
        self.time_steps["ema"] += 1
        if self.time_steps["ema"] % max(1, self.cfg.accumulated_gradient) != 0:
            return
        with torch.no_grad():
            for param, param_ema in zip(model.parameters(), model_ema.parameters()):
                if param.requires_grad:
                    data = param.data.to(device)  # expect[e]: any
                    param_ema.data.copy_((1 - beta) * data + beta * param_ema.data)


class PPOTrainer:
    def __init__(self, cfg, actor, strategy, device):
        self.cfg, self.actor, self.strategy, self.device = cfg, actor, strategy, device
        self.ema_model = copy.deepcopy(actor).eval() if cfg.enable_ema else None
        self.optim = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)

    def policy_loss(self, log_probs, old_log_probs, advantages):
        ratio = (log_probs - old_log_probs).exp()
        surr1 = ratio * advantages
        surr2 = ratio.clamp(1 - self.cfg.clip_eps, 1 + self.cfg.clip_eps) * advantages
        return -torch.min(surr1, surr2).mean()

    def training_step(self, tokens, old_log_probs, advantages):
        logits = self.actor(tokens[:, :-1])
        log_probs = torch.gather(F.log_softmax(logits, -1), 2, tokens[:, 1:, None]).squeeze(-1)
        loss = self.policy_loss(log_probs, old_log_probs, advantages)
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        if self.ema_model is not None:
            self.strategy.moving_average(self.actor, self.ema_model, self.cfg.ema_beta)
        return loss.detach()


def make_rollout(cfg, device):
    tokens = torch.randint(0, cfg.vocab, (cfg.batch_size, cfg.seq_len), device=device)
    old_log_probs = -torch.rand(cfg.batch_size, cfg.seq_len - 1, device=device) * 3
    advantages = torch.randn(cfg.batch_size, cfg.seq_len - 1, device=device)
    return tokens, old_log_probs, advantages


if __name__ == "__main__":
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    cfg = PPOConfig()
    actor = TinyActor(cfg).to(device)
    trainer = PPOTrainer(cfg, actor, SimpleStrategy(cfg), device)
    losses = torch.stack([trainer.training_step(*make_rollout(cfg, device)) for _ in range(20)])
    print("mean policy loss:", losses.mean().item())
