# source: https://github.com/rikdz/GraphWriter/issues/9
# area: device placement
# bug: the entity padding mask is sent with a bare .cuda(), i.e. to the current device cuda:0, while the model runs on the configured --gpu device
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def build_parser():
    p = argparse.ArgumentParser(description="graph-to-text entity encoder")
    p.add_argument("--gpu", type=int, default=0)
    p.add_argument("--hsz", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ent_vocab", type=int, default=200)
    p.add_argument("--steps", type=int, default=10)
    return p


class EntityAttention(nn.Module):
    def __init__(self, hsz, heads):
        super().__init__()
        self.heads = heads
        self.key_dim = hsz // heads
        self.q = nn.Linear(hsz, hsz)
        self.k = nn.Linear(hsz, hsz)
        self.v = nn.Linear(hsz, hsz)
        self.out = nn.Linear(hsz, hsz)

    def forward(self, query, ents, ent_lens):
        b, n, h = ents.shape
        q = self.q(query).view(b, 1, self.heads, self.key_dim).transpose(1, 2)
        k = self.k(ents).view(b, n, self.heads, self.key_dim).transpose(1, 2)
        v = self.v(ents).view(b, n, self.heads, self.key_dim).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.key_dim)
        mask = torch.zeros(b, n, dtype=torch.bool)
        for i, length in enumerate(ent_lens):
            mask[i, length:] = True
        if scores.is_cuda:
            mask = mask.cuda()  # expect: any
        scores = scores.masked_fill(mask[:, None, None, :], float("-inf"))
        ctx = F.softmax(scores, dim=-1) @ v
        return self.out(ctx.transpose(1, 2).reshape(b, 1, h)).squeeze(1)


class TitleConditionedEncoder(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.ent_emb = nn.Embedding(args.ent_vocab, args.hsz, padding_idx=0)
        self.title = nn.GRU(args.hsz, args.hsz, batch_first=True)
        self.attn = EntityAttention(args.hsz, args.heads)
        self.cls = nn.Linear(2 * args.hsz, args.ent_vocab)

    def forward(self, title_ids, ent_ids, ent_lens):
        _, h = self.title(self.ent_emb(title_ids))
        query = h[-1]
        ctx = self.attn(query, self.ent_emb(ent_ids), ent_lens)
        return self.cls(torch.cat([query, ctx], dim=-1))


def make_batch(args, b=16, max_ents=10, title_len=7):
    ent_lens = torch.randint(2, max_ents + 1, (b,)).tolist()
    ent_ids = torch.zeros(b, max_ents, dtype=torch.long)
    for i, length in enumerate(ent_lens):
        ent_ids[i, :length] = torch.randint(1, args.ent_vocab, (length,))
    title_ids = torch.randint(1, args.ent_vocab, (b, title_len))
    target = ent_ids[:, 0]
    return title_ids, ent_ids, ent_lens, target


def main(argv=None):
    args = build_parser().parse_args(argv)
    device = torch.device(f"cuda:{args.gpu}" if torch.cuda.is_available() else "cpu")
    model = TitleConditionedEncoder(args).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        title_ids, ent_ids, ent_lens, target = make_batch(args)
        logits = model(title_ids.to(device), ent_ids.to(device), ent_lens)
        loss = F.cross_entropy(logits, target.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("final loss", loss.item())


if __name__ == "__main__":
    main([])
