# source: https://github.com/hao-ai-lab/FastVideo/issues/1028
# area: transfer & sync
# bug: map_to_index turns the top-k block map back into indices with nonzero(), a data-dependent-shape op that syncs the host in every attention layer
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def topk_index_to_map(topk_idx, num_kv_blocks):
    b, h, nq, _ = topk_idx.shape
    block_map = torch.zeros(b, h, nq, num_kv_blocks, dtype=torch.bool, device=topk_idx.device)
    block_map.scatter_(-1, topk_idx, True)
    return block_map


def map_to_index(block_map, topk):
    b, h, nq, _ = block_map.shape
    coords = block_map.nonzero(as_tuple=False)  # expect: any
    kv_idx = coords[:, -1].view(b, h, nq, topk)
    return kv_idx


class VideoSparseAttention(nn.Module):
    def __init__(self, dim, heads, block_size=16, topk=3):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.block_size = block_size
        self.topk = topk
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        bsz, seq, dim = x.shape
        nb = seq // self.block_size
        q, k, v = self.qkv(x).view(bsz, seq, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q_blk = q.view(bsz, self.heads, nb, self.block_size, self.head_dim)
        k_blk = k.view(bsz, self.heads, nb, self.block_size, self.head_dim)
        v_blk = v.view(bsz, self.heads, nb, self.block_size, self.head_dim)

        coarse = torch.einsum("bhqd,bhkd->bhqk", q_blk.mean(3), k_blk.mean(3))
        topk_idx = coarse.topk(self.topk, dim=-1).indices
        block_map = topk_index_to_map(topk_idx, nb)
        kv_idx = map_to_index(block_map, self.topk)

        gather_idx = kv_idx[..., None, None].expand(-1, -1, -1, -1, self.block_size, self.head_dim)
        k_sel = torch.gather(k_blk.unsqueeze(2).expand(-1, -1, nb, -1, -1, -1), 3, gather_idx)
        v_sel = torch.gather(v_blk.unsqueeze(2).expand(-1, -1, nb, -1, -1, -1), 3, gather_idx)
        k_sel = k_sel.flatten(3, 4)
        v_sel = v_sel.flatten(3, 4)

        attn = torch.einsum("bhqsd,bhqtd->bhqst", q_blk, k_sel) / math.sqrt(self.head_dim)
        out = torch.einsum("bhqst,bhqtd->bhqsd", attn.softmax(-1), v_sel)
        out = out.reshape(bsz, self.heads, seq, self.head_dim).transpose(1, 2).reshape(bsz, seq, dim)
        return self.proj(out)


class DiTBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = VideoSparseAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


def main():
    torch.manual_seed(0)
    dim, heads, seq = 64, 4, 128
    model = nn.Sequential(*[DiTBlock(dim, heads) for _ in range(4)]).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    latents = torch.randn(2, seq, dim, device=device)
    target = torch.randn(2, seq, dim, device=device)
    for step in range(3):
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(latents), target)
        loss.backward()
        opt.step()
    print("final loss", loss.item())


if __name__ == "__main__":
    main()
