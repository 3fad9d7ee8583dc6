# twin of: bugs/dj_amp01_grpo_half_policy_scaler.py
# area: AMP
# correct: the trainable policy keeps float32 master weights and autocast supplies fp16 compute, so GradScaler unscales fp32 grads
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class GRPOConfig:
    vocab_size: int = 64
    hidden: int = 48
    seq_len: int = 12
    group_size: int = 4
    prompts_per_step: int = 3
    lr: float = 1e-4
    max_grad_norm: float = 1.0
    steps: int = 4
    kl_coef: float = 0.02


class TinyPolicy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.body = nn.GRU(cfg.hidden, cfg.hidden, batch_first=True)
        self.head = nn.Linear(cfg.hidden, cfg.vocab_size)

    def forward(self, tokens):
        h, _ = self.body(self.embed(tokens))
        return self.head(h)


def length_reward(completions, target_token=7):
    hits = (completions == target_token).float().mean(dim=1)
    return hits - 0.1 * completions.float().std(dim=1) / completions.shape[1]


class GRPOTrainer:
    def __init__(self, policy, ref_policy, cfg, device):
        self.cfg = cfg
        self.device = device
        self.use_amp = device.type == "cuda"
        self.model_dtype = torch.float16 if self.use_amp else torch.float32
        self.policy = policy.to(device)
        self.ref_policy = ref_policy.to(device=device, dtype=self.model_dtype).eval()
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr)
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.use_amp)

    def sample_group(self, prompts):
        with torch.no_grad():
            logits = self.policy(prompts)
            probs = F.softmax(logits.float(), dim=-1)
            flat = torch.multinomial(probs.view(-1, probs.shape[-1]), 1)
        return flat.view(prompts.shape)

    def train_step(self, prompts):
        cfg = self.cfg
        prompts = prompts.repeat_interleave(cfg.group_size, dim=0)
        completions = self.sample_group(prompts)
        rewards = length_reward(completions).view(-1, cfg.group_size)
        adv = (rewards - rewards.mean(dim=1, keepdim=True)) / (rewards.std(dim=1, keepdim=True) + 1e-4)
        adv = adv.view(-1, 1)

        with torch.autocast(device_type=self.device.type, enabled=self.use_amp):
            logp = F.log_softmax(self.policy(prompts), dim=-1)
            tok_logp = logp.gather(-1, completions.unsqueeze(-1)).squeeze(-1)
            with torch.no_grad():
                ref_logp = F.log_softmax(self.ref_policy(prompts), dim=-1)
                ref_tok = ref_logp.gather(-1, completions.unsqueeze(-1)).squeeze(-1)
            kl = torch.exp(ref_tok - tok_logp) - (ref_tok - tok_logp) - 1
            loss = -(adv * tok_logp).mean() + cfg.kl_coef * kl.mean()

        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.unscale_(self.optimizer)
        torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.max_grad_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return loss.detach()

    def train(self, prompt_source):
        history = []
        for _ in range(self.cfg.steps):
            prompts = prompt_source().to(self.device)
            history.append(self.train_step(prompts))
        return torch.stack(history).float().mean()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cfg = GRPOConfig()
    policy, ref = TinyPolicy(cfg), TinyPolicy(cfg)
    ref.load_state_dict(policy.state_dict())
    trainer = GRPOTrainer(policy, ref, cfg, device)
    source = lambda: torch.randint(0, cfg.vocab_size, (cfg.prompts_per_step, cfg.seq_len))
    print(f"mean loss {trainer.train(source).item():.4f}")


if __name__ == "__main__":
    main()
