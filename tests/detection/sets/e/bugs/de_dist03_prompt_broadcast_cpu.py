# source: https://github.com/mistralai/mistral-inference/pull/257
# area: porting & distributed
# bug: the prompt-length tensor is created on the CPU and passed to dist.broadcast, which the NCCL backend rejects ("No backend type associated with device type cpu")
import os

import torch
import torch.distributed as dist
import torch.nn as nn

VOCAB = "abcdefghijklmnopqrstuvwxyz .,!?"


class CharTokenizer:
    def __init__(self, alphabet=VOCAB):
        self.stoi = {c: i + 1 for i, c in enumerate(alphabet)}
        self.itos = {i: c for c, i in self.stoi.items()}

    @property
    def vocab_size(self):
        return len(self.stoi) + 1

    def encode(self, text):
        return [self.stoi.get(c, 0) for c in text.lower()]

    def decode(self, ids):
        return "".join(self.itos.get(i, "?") for i in ids)


class TinyLM(nn.Module):
    def __init__(self, vocab, dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids, h=None):
        y, h = self.rnn(self.emb(ids), h)
        return self.out(y), h


def init_runtime():
    if "RANK" in os.environ:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        local_rank = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(local_rank)
            return torch.device("cuda", local_rank)
        return torch.device("cpu")
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def is_main():
    return not dist.is_initialized() or dist.get_rank() == 0


def share_prompt(tokenizer, text, device):
    ids = tokenizer.encode(text) if is_main() else []
    length_tensor = torch.tensor([len(ids)], dtype=torch.long)  # expect[w]: any
    if dist.is_initialized():
        dist.broadcast(length_tensor, src=0)  # expect[w]: any
    n = int(length_tensor.item())
    tokens = torch.zeros(n, dtype=torch.long, device=device)
    if is_main():
        tokens.copy_(torch.tensor(ids, dtype=torch.long))
    if dist.is_initialized():
        dist.broadcast(tokens, src=0)
    return tokens


@torch.no_grad()
def generate(model, prompt_ids, max_new_tokens=24, temperature=0.8, seed=0):
    gen = torch.Generator(device=prompt_ids.device).manual_seed(seed)
    logits, h = model(prompt_ids.unsqueeze(0))
    out = torch.empty(max_new_tokens, dtype=torch.long, device=prompt_ids.device)
    for i in range(max_new_tokens):
        probs = torch.softmax(logits[:, -1] / temperature, dim=-1)
        nxt = torch.multinomial(probs, 1, generator=gen)
        out[i] = nxt[0, 0]
        logits, h = model(nxt, h)
    return out


def main():
    device = init_runtime()
    tok = CharTokenizer()
    torch.manual_seed(0)
    model = TinyLM(tok.vocab_size).to(device).eval()
    prompt = "the quick brown fox jumps over"
    ids = share_prompt(tok, prompt, device)
    completion = generate(model, ids)
    if is_main():
        print(prompt + "|" + tok.decode(completion.tolist()))
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
