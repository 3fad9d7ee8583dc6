# twin of: bugs/dm_amp07_chunked_logprob_function_backward.py
# area: AMP
# correct: backward casts the lm_head weight to the hidden dtype exactly as forward does, so the recomputed matmul has matching dtypes
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class PolicyConfig:
    vocab: int = 96
    d_model: int = 48
    seq_len: int = 24
    batch: int = 8
    chunk_rows: int = 64
    clip_eps: float = 0.2
    lr: float = 1e-3
    iterations: int = 4


class ChunkedTokenLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, chunk_rows):
        out = hidden.new_empty(hidden.shape[0], dtype=torch.float32)
        for s in range(0, hidden.shape[0], chunk_rows):
            h = hidden[s:s + chunk_rows]
            logits = (h @ weight.to(h.dtype).t()).float()
            out[s:s + chunk_rows] = logits.log_softmax(-1).gather(1, targets[s:s + chunk_rows, None]).squeeze(1)
        ctx.save_for_backward(hidden, weight, targets)
        ctx.chunk_rows = chunk_rows
        return out

    @staticmethod
    def backward(ctx, grad_out):
        hidden, weight, targets = ctx.saved_tensors
        grad_hidden = torch.empty_like(hidden)
        grad_weight = torch.zeros_like(weight)
        for s in range(0, hidden.shape[0], ctx.chunk_rows):
            h = hidden[s:s + ctx.chunk_rows]
            logits = (h @ weight.to(h.dtype).t()).float()
            probs = logits.softmax(-1)
            onehot = F.one_hot(targets[s:s + ctx.chunk_rows], weight.shape[0]).float()
            g = ((onehot - probs) * grad_out[s:s + ctx.chunk_rows, None]).to(h.dtype)
            grad_hidden[s:s + ctx.chunk_rows] = g @ weight.to(h.dtype)
            grad_weight += (g.t() @ h).to(weight.dtype)
        return grad_hidden, grad_weight, None, None


class TinyPolicy(nn.Module):
    def __init__(self, cfg: PolicyConfig):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.mix = nn.Sequential(nn.Linear(cfg.d_model, 2 * cfg.d_model), nn.GELU(), nn.Linear(2 * cfg.d_model, cfg.d_model))
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.chunk_rows = cfg.chunk_rows

    def token_logprobs(self, input_ids, targets):
        h = self.mix(self.embed(input_ids))
        flat_h = h.reshape(-1, h.shape[-1])
        lp = ChunkedTokenLogProb.apply(flat_h, self.lm_head.weight, targets.reshape(-1), self.chunk_rows)
        return lp.view_as(targets)


def ppo_step(policy, old_logprobs, input_ids, targets, advantages, cfg, device, use_amp, opt, scaler):
    with torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
        new_lp = policy.token_logprobs(input_ids, targets)
        ratio = torch.exp(new_lp - old_logprobs)
        unclipped = ratio * advantages[:, None]
        clipped = ratio.clamp(1 - cfg.clip_eps, 1 + cfg.clip_eps) * advantages[:, None]
        loss = -torch.min(unclipped, clipped).mean()
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    use_amp = device.type == "cuda"
    cfg = PolicyConfig()
    policy = TinyPolicy(cfg).to(device)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    scaler = torch.amp.GradScaler(device.type, enabled=use_amp)
    seqs = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq_len + 1), device=device)
    input_ids, targets = seqs[:, :-1], seqs[:, 1:]
    rewards = (targets % 2 == 0).float().mean(dim=1)
    advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
    with torch.no_grad(), torch.autocast(device.type, dtype=torch.float16, enabled=use_amp):
        old_lp = policy.token_logprobs(input_ids, targets)
    losses = torch.stack([ppo_step(policy, old_lp, input_ids, targets, advantages, cfg, device, use_amp, opt, scaler)
                          for _ in range(cfg.iterations)])
    print("clipped surrogate per iteration:", losses.tolist())


if __name__ == "__main__":
    main()
