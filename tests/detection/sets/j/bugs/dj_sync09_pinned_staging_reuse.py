# source: https://github.com/NVIDIA/Megatron-LM/pull/5715
# area: transfer & sync
# bug: the pinned host bookkeeping buffer is copied to the GPU with non_blocking=True and then overwritten by the next decode step while the copy may still be in flight
import torch
import torch.nn as nn


class BookkeepingBuffers:
    """Host-side request metadata (slot, position) staged in pinned memory and shipped each step."""

    def __init__(self, max_requests, device):
        pin = torch.cuda.is_available()
        self.cpu_buf = torch.zeros(max_requests, 2, dtype=torch.long, pin_memory=pin)
        self.gpu_buf = torch.zeros(max_requests, 2, dtype=torch.long, device=device)

    def upload(self, slots, positions):
        n = len(slots)
        self.cpu_buf[:n, 0] = torch.tensor(slots, dtype=torch.long)
        self.cpu_buf[:n, 1] = torch.tensor(positions, dtype=torch.long)
        self.gpu_buf[:n].copy_(self.cpu_buf[:n], non_blocking=True)  # expect: any
        return self.gpu_buf[:n, 0], self.gpu_buf[:n, 1]


class TinyDecoder(nn.Module):
    def __init__(self, vocab=512, dim=64, max_slots=16, max_len=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.out = nn.Linear(dim, vocab)
        self.register_buffer("k_cache", torch.zeros(max_slots, max_len, dim))
        self.register_buffer("v_cache", torch.zeros(max_slots, max_len, dim))

    def decode_step(self, tokens, slots, positions):
        h = self.embed(tokens) + self.pos(positions)
        k, v = self.kv(h).chunk(2, dim=-1)
        self.k_cache[slots, positions] = k
        self.v_cache[slots, positions] = v
        keys, values = self.k_cache[slots], self.v_cache[slots]
        scores = torch.einsum("bd,bld->bl", self.q(h), keys) / keys.shape[-1] ** 0.5
        max_len = keys.shape[1]
        causal = torch.arange(max_len, device=h.device).unsqueeze(0) <= positions.unsqueeze(1)
        attn = scores.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        ctx = torch.einsum("bl,bld->bd", attn, values)
        return self.out(h + ctx)


class InferenceEngine:
    def __init__(self, model, device, max_requests=16):
        self.model = model.to(device).eval()
        self.device = device
        self.book = BookkeepingBuffers(max_requests, device)

    @torch.no_grad()
    def generate(self, prompt_tokens, max_new_tokens=24):
        n = len(prompt_tokens)
        slots = list(range(n))
        positions = [0] * n
        tokens = torch.tensor(prompt_tokens, device=self.device)
        generated = []
        for _ in range(max_new_tokens):
            slot_t, pos_t = self.book.upload(slots, positions)
            logits = self.model.decode_step(tokens, slot_t, pos_t)
            tokens = logits.argmax(dim=-1)
            generated.append(tokens)
            positions = [p + 1 for p in positions]
        return torch.stack(generated, dim=1).cpu()


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    engine = InferenceEngine(TinyDecoder(), device)
    out = engine.generate([3, 17, 42, 99, 256, 7, 8, 400])
    print("generated", tuple(out.shape), "first row", out[0, :8].tolist())


if __name__ == "__main__":
    main()
