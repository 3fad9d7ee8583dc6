"""A token stream from a tiny grammar, split into sequence-first training columns."""

import torch


def make_stream(length, vocab_size, generator):
    """Runs that count up from a random start, wrapping around the vocabulary."""
    tokens = []
    while len(tokens) < length:
        start = int(torch.randint(0, vocab_size, (1,), generator=generator))
        run = int(torch.randint(2, 6, (1,), generator=generator))
        tokens += [(start + k) % vocab_size for k in range(run)]
    return torch.tensor(tokens[:length])


def batchify(stream, batch_size):
    n = stream.size(0) // batch_size
    return stream[: n * batch_size].view(batch_size, n).t().contiguous()


def get_batch(source, i, seq_len):
    length = min(seq_len, len(source) - 1 - i)
    return source[i : i + length], source[i + 1 : i + 1 + length].reshape(-1)
