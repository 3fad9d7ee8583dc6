# twin of: bugs/dk_dtype03_policy_attn_big_neg_half.py
# area: dtype
# correct: the masking constant is taken from torch.finfo of the score dtype, so it stays finite in float16 and fully padded rows stay finite
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class PolicyConfig:
    state_dim: int = 14
    action_dim: int = 7
    hidden: int = 64
    heads: int = 4
    layers: int = 2
    chunk: int = 8


def eager_attention_forward(q, k, v, attention_mask, num_heads):
    b, t, d = q.shape
    hd = d // num_heads
    q, k, v = (z.view(b, t, num_heads, hd).transpose(1, 2) for z in (q, k, v))
    att_weights = q @ k.transpose(-1, -2) * hd ** -0.5
    big_neg = torch.finfo(att_weights.dtype).min
    masked_att_weights = torch.where(attention_mask[:, None, :, :], att_weights, big_neg)
    probs = F.softmax(masked_att_weights, dim=-1)
    return (probs @ v).transpose(1, 2).reshape(b, t, d)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.heads = cfg.heads
        self.norm1, self.norm2 = nn.LayerNorm(cfg.hidden), nn.LayerNorm(cfg.hidden)
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.mlp = nn.Sequential(nn.Linear(cfg.hidden, 4 * cfg.hidden), nn.GELU(), nn.Linear(4 * cfg.hidden, cfg.hidden))

    def forward(self, x, mask):
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        x = x + self.proj(eager_attention_forward(q, k, v, mask, self.heads))
        return x + self.mlp(self.norm2(x))


class ChunkPolicy(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.state_in = nn.Linear(cfg.state_dim, cfg.hidden)
        self.action_queries = nn.Parameter(torch.randn(cfg.chunk, cfg.hidden) * 0.02)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.head = nn.Linear(cfg.hidden, cfg.action_dim)

    def build_mask(self, obs_valid):
        b, n_obs = obs_valid.shape
        valid = torch.cat([obs_valid, obs_valid.new_ones(b, self.cfg.chunk)], dim=1)
        return valid[:, :, None] & valid[:, None, :]

    def forward(self, states, obs_valid):
        b = states.size(0)
        x = torch.cat([self.state_in(states), self.action_queries.expand(b, -1, -1)], dim=1)
        mask = self.build_mask(obs_valid)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(x[:, -self.cfg.chunk:])


@torch.no_grad()
def control_loop(policy, device, dtype, steps=5, history=6):
    chunks = []
    for step in range(steps):
        states = torch.randn(2, history, policy.cfg.state_dim, device=device, dtype=dtype)
        obs_valid = torch.ones(2, history, dtype=torch.bool, device=device)
        obs_valid[1, : step % history] = False
        chunks.append(policy(states, obs_valid))
    actions = torch.stack(chunks).float()
    print(f"rollout actions {tuple(actions.shape)}, finite={bool(torch.isfinite(actions).all())}, "
          f"mean |a|={actions.abs().mean().item():.4f}")


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    policy = ChunkPolicy(PolicyConfig()).to(device=device, dtype=dtype).eval()
    control_loop(policy, device, dtype)


if __name__ == "__main__":
    main()
