# source: https://github.com/tiiuae/Falcon-Perception/pull/34
# area: transfer & sync
# bug: Sequence builds its CPU outputs from Python lists of 0-dim GPU tensors, so every generated token and logprob is fetched by its own device-to-host copy
import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class TinyDecoder(nn.Module):
    def __init__(self, vocab=512, dim=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.cell = nn.GRUCell(dim, dim)
        self.head = nn.Linear(dim, vocab)

    def step(self, tokens, hidden):
        hidden = self.cell(self.embed(tokens), hidden)
        return self.head(hidden), hidden


class Sequence:
    def __init__(self, seq_id, prompt_ids):
        self.seq_id = seq_id
        self.prompt_ids = prompt_ids
        self._token_list = []
        self._logprob_list = []

    def append(self, token, logprob):
        self._token_list.append(token)
        self._logprob_list.append(logprob)

    @property
    def output_ids(self):
        return torch.tensor(self._token_list, dtype=torch.long)  # expect[w]: any

    @property
    def output_logprobs(self):
        return torch.tensor(self._logprob_list, dtype=torch.float32)  # expect[w]: any

    def __len__(self):
        return len(self._token_list)


class Generator:
    def __init__(self, model, eos_id=0, temperature=0.8):
        self.model = model
        self.eos_id = eos_id
        self.temperature = temperature

    @torch.no_grad()
    def generate(self, prompts, max_new_tokens=64):
        self.model.eval()
        batch = len(prompts)
        seqs = [Sequence(i, p) for i, p in enumerate(prompts)]
        hidden = torch.zeros(batch, self.model.cell.hidden_size, device=device)
        last = torch.stack([p[-1] for p in prompts]).to(device)
        finished = torch.zeros(batch, dtype=torch.bool, device=device)
        for _ in range(max_new_tokens):
            logits, hidden = self.model.step(last, hidden)
            logp = F.log_softmax(logits / self.temperature, dim=-1)
            nxt = torch.multinomial(logp.exp(), 1).squeeze(1)
            nxt = torch.where(finished, torch.full_like(nxt, self.eos_id), nxt)
            tok_logp = logp.gather(1, nxt.unsqueeze(1)).squeeze(1)
            for i, seq in enumerate(seqs):
                seq.append(nxt[i], tok_logp[i])
            finished |= nxt == self.eos_id
            last = nxt
        return seqs


def summarize(seqs):
    rows = []
    for seq in seqs:
        ids = seq.output_ids
        lps = seq.output_logprobs
        rows.append((seq.seq_id, ids[:8].tolist(), float(lps.sum())))
    return rows


if __name__ == "__main__":
    torch.manual_seed(0)
    model = TinyDecoder().to(device)
    prompts = [torch.randint(1, 512, (5,)) for _ in range(16)]
    seqs = Generator(model).generate(prompts, max_new_tokens=48)
    for sid, head, total in summarize(seqs)[:4]:
        print(sid, head, round(total, 2))
