# source: https://github.com/sgl-project/sglang/pull/16493
# area: transfer & sync
# bug: sampled token ids are copied GPU->CPU with non_blocking=True and read on the host right away without any synchronization, so the scheduler may see stale or garbage token ids
import torch
import torch.nn as nn
from dataclasses import dataclass, field


@dataclass
class Request:
    rid: int
    prompt: list
    max_new_tokens: int
    output: list = field(default_factory=list)
    finished: bool = False


class TinyLM(nn.Module):
    def __init__(self, vocab=101, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens, hidden=None):
        out, hidden = self.rnn(self.embed(tokens), hidden)
        return self.head(out[:, -1]), hidden


class GreedySampler:
    def __init__(self, temperature_floor=1e-5):
        self.temperature_floor = temperature_floor

    def sample(self, logits):
        return torch.argmax(logits, dim=-1)

    def to_host(self, token_ids):
        return token_ids.to("cpu", non_blocking=True)  # expect[w]: any


class Scheduler:
    def __init__(self, model, device, eos_id=0):
        self.model = model
        self.device = device
        self.eos_id = eos_id
        self.sampler = GreedySampler()

    @torch.no_grad()
    def run_batch(self, requests):
        prompts = torch.tensor([r.prompt for r in requests], device=self.device)
        logits, hidden = self.model(prompts)
        while not all(r.finished for r in requests):
            next_ids = self.sampler.sample(logits)
            host_ids = self.sampler.to_host(next_ids)
            self.process_output(requests, host_ids.tolist())  # expect[w]: any
            logits, hidden = self.model(next_ids.unsqueeze(1), hidden)
        return requests

    def process_output(self, requests, token_ids):
        for req, tok in zip(requests, token_ids):
            if req.finished:
                continue
            req.output.append(tok)
            if tok == self.eos_id or len(req.output) >= req.max_new_tokens:
                req.finished = True


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = TinyLM().to(device).eval()
    gen = torch.Generator().manual_seed(1)
    requests = [
        Request(rid=i, prompt=torch.randint(1, 101, (6,), generator=gen).tolist(),
                max_new_tokens=8 + 2 * i)
        for i in range(4)
    ]
    done = Scheduler(model, device).run_batch(requests)
    for r in done:
        print(r.rid, len(r.output), r.output[:6])


if __name__ == "__main__":
    main()
