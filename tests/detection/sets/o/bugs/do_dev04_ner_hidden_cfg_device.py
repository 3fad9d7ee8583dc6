# source: https://github.com/taishan1994/pytorch_triple_extraction/issues/8
# area: device placement
# bug: the tagger fixes self.device from the config's gpu_ids at construction ("-1" -> cpu); the predictor later moves the model to cuda, but init_hidden still builds h0/c0 on the CPU
import json
import os
import tempfile
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn


@dataclass
class NerArgs:
    vocab_size: int = 300
    embed_dim: int = 32
    lstm_hidden: int = 32
    num_layers: int = 1
    num_tags: int = 7
    max_seq_len: int = 20
    gpu_ids: str = "-1"


class BiLstmTagger(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        gpu_ids = args.gpu_ids.split(",")
        self.device = torch.device("cpu" if gpu_ids[0] == "-1" else "cuda:" + gpu_ids[0])  # expect[w]: any
        self.embed = nn.Embedding(args.vocab_size, args.embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(args.embed_dim, args.lstm_hidden, args.num_layers, bidirectional=True, batch_first=True)
        self.linear = nn.Linear(2 * args.lstm_hidden, args.num_tags)
        self.criterion = nn.CrossEntropyLoss(ignore_index=-100)

    def init_hidden(self, batch_size):
        shape = (2 * self.args.num_layers, batch_size, self.args.lstm_hidden)
        h0 = torch.zeros(shape).to(self.device)  # expect[w]: any
        c0 = torch.zeros(shape).to(self.device)  # expect[w]: any
        return h0, c0

    def forward(self, token_ids, labels=None):
        hidden = self.init_hidden(token_ids.size(0))
        seq_out, _ = self.lstm(self.embed(token_ids), hidden)
        logits = self.linear(seq_out)
        if labels is None:
            return logits
        return self.criterion(logits.reshape(-1, logits.size(-1)), labels.reshape(-1)), logits


def train_and_save(out_dir, steps=20):
    args = NerArgs()
    model = BiLstmTagger(args)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        tokens = torch.randint(1, args.vocab_size, (16, args.max_seq_len), generator=g)
        labels = tokens % args.num_tags
        loss, _ = model(tokens, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), os.path.join(out_dir, "tagger.pt"))
    with open(os.path.join(out_dir, "args.json"), "w") as f:
        json.dump(asdict(args), f)


class NerPredictor:
    def __init__(self, model_dir):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        with open(os.path.join(model_dir, "args.json")) as f:
            self.args = NerArgs(**json.load(f))
        self.model = BiLstmTagger(self.args)
        state = torch.load(os.path.join(model_dir, "tagger.pt"), map_location="cpu")
        self.model.load_state_dict(state)
        self.model.to(self.device).eval()

    @torch.no_grad()
    def predict(self, batch_token_ids):
        tokens = torch.tensor(batch_token_ids, dtype=torch.long).to(self.device)
        tags = self.model(tokens).argmax(-1)
        return tags.cpu().tolist()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        train_and_save(d)
        predictor = NerPredictor(d)
        sents = [[(7 * i + j) % 299 + 1 for j in range(20)] for i in range(4)]
        out = predictor.predict(sents)
        acc = sum(p == t % 7 for s, o in zip(sents, out) for t, p in zip(s, o)) / 80
        print("tag accuracy on probe sentences:", round(acc, 3))
