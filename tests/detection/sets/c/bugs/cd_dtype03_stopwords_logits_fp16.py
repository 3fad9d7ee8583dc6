# source: https://github.com/QwenLM/Qwen/issues/32
# area: dtype
# bug: the logits processor writes float(2**30) into the fp16 logits used on GPU; it overflows float16 (inf, or a RuntimeError on older PyTorch) and the sampling softmax turns the row into NaN
import torch
import torch.nn as nn


class TinyLM(nn.Module):
    def __init__(self, vocab=64, dim=48):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.lm_head = nn.Linear(dim, vocab)

    def forward(self, ids, state=None):
        out, state = self.rnn(self.embed(ids), state)
        return self.lm_head(out[:, -1]), state


class StopWordsLogitsProcessor:
    """Forces EOS once a stop sequence was produced or the length budget is spent."""

    def __init__(self, stop_words_ids, eos_token_id, max_new_tokens):
        self.stop_words_ids = [list(s) for s in stop_words_ids]
        self.eos_token_id = eos_token_id
        self.max_new_tokens = max_new_tokens

    def _hit_stop(self, seq):
        for stop in self.stop_words_ids:
            n = len(stop)
            if len(seq) >= n and seq[-n:] == stop:
                return True
        return False

    def __call__(self, generated, scores):
        for i, seq in enumerate(generated):
            if len(seq) >= self.max_new_tokens - 1 or self._hit_stop(seq):
                scores[i, self.eos_token_id] = float(2**30)  # expect: any
        return scores


@torch.no_grad()
def generate(model, prompts, processor, eos_token_id, device, temperature=0.8, seed=0):
    gen = torch.Generator(device=device).manual_seed(seed)
    ids = prompts.to(device)
    logits, state = model(ids)
    generated = [[] for _ in range(ids.size(0))]
    finished = torch.zeros(ids.size(0), dtype=torch.bool)
    for _ in range(processor.max_new_tokens):
        logits = processor(generated, logits)
        probs = torch.softmax(logits / temperature, dim=-1)
        next_tok = torch.multinomial(probs, 1, generator=gen).squeeze(1).cpu()
        for i, t in enumerate(next_tok.tolist()):
            if not finished[i]:
                generated[i].append(t)
        finished |= next_tok == eos_token_id
        if bool(finished.all()):
            break
        logits, state = model(next_tok[:, None].to(device), state)
    return generated


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.float16 if device.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = TinyLM().to(device=device, dtype=dtype).eval()
    eos = 1
    processor = StopWordsLogitsProcessor([[7], [12, 13]], eos_token_id=eos, max_new_tokens=16)
    prompts = torch.randint(2, 64, (4, 6))
    outputs = generate(model, prompts, processor, eos, device)
    for i, seq in enumerate(outputs):
        print(f"sample {i}: {len(seq)} tokens, ends with eos={seq[-1] == eos}")


if __name__ == "__main__":
    main()
