# source: https://github.com/cosmoquester/memoria/pull/8
# area: dtype
# bug: the Hebbian co-firing counts are updated with an int64 matrix product, which CUDA does not implement ("addmm_cuda" not implemented for 'Long') although it works on the CPU
import torch
import torch.nn as nn
import torch.nn.functional as F


class EngramMemory(nn.Module):
    """Keeps a fixed pool of memory slots and counts how often pairs of slots fire together."""

    def __init__(self, num_slots, dim, top_k=4, decay_every=5):
        super().__init__()
        self.top_k = top_k
        self.decay_every = decay_every
        self.register_buffer("keys", F.normalize(torch.randn(num_slots, dim), dim=-1))
        self.register_buffer("values", torch.randn(num_slots, dim) * 0.1)
        self.register_buffer("co_fire", torch.zeros(num_slots, num_slots, dtype=torch.long))
        self.register_buffer("fire_count", torch.zeros(num_slots, dtype=torch.long))
        self.steps = 0

    def recall(self, queries):
        sims = F.normalize(queries, dim=-1) @ self.keys.T
        weights, idx = sims.topk(self.top_k, dim=-1)
        retrieved = (weights.softmax(-1).unsqueeze(-1) * self.values[idx]).sum(1)
        return retrieved, idx

    def strengthen(self, fired_idx):
        fired = torch.zeros(fired_idx.size(0), self.keys.size(0), dtype=torch.long, device=fired_idx.device)
        fired.scatter_(1, fired_idx, 1)
        self.co_fire += fired.T @ fired  # expect: any
        self.fire_count += fired.sum(0)
        self.steps += 1
        if self.steps % self.decay_every == 0:
            self.co_fire //= 2

    def associated(self, slot, n=3):
        row = self.co_fire[slot].clone()
        row[slot] = -1
        return row.topk(n).indices


class MemoryAugmentedEncoder(nn.Module):
    def __init__(self, vocab, dim, num_slots):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mix = nn.GRU(dim, dim, batch_first=True)
        self.memory = EngramMemory(num_slots, dim)
        self.out = nn.Linear(2 * dim, vocab)

    def forward(self, tokens):
        h, _ = self.mix(self.embed(tokens))
        summary = h[:, -1]
        retrieved, idx = self.memory.recall(summary)
        if self.training:
            self.memory.strengthen(idx)
        return self.out(torch.cat([summary, retrieved], dim=-1))


def train(model, device, steps=10, vocab=500):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    g = torch.Generator().manual_seed(1)
    model.train()
    for step in range(steps):
        tokens = torch.randint(0, vocab, (32, 24), generator=g).to(device)
        target = tokens[:, 0]
        loss = F.cross_entropy(model(tokens), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return loss.detach()


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    model = MemoryAugmentedEncoder(vocab=500, dim=64, num_slots=128).to(device)
    final = train(model, device)
    mem = model.memory
    busiest = int(mem.fire_count.argmax())
    print(f"final loss {final.item():.3f}; slot {busiest} fired {int(mem.fire_count[busiest])} times")
    print("strongest partners:", mem.associated(busiest).tolist())


if __name__ == "__main__":
    main()
