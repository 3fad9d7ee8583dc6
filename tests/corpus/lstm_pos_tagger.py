"""An LSTM part-of-speech tagger trained one sentence at a time, tutorial style.

Sentences become index tensors in a helper; the hidden state is reset per sentence
through an `init_hidden` method whose result is stored on the model.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(1)

TRAINING_DATA = [
    ("the dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("everybody read that book".split(), ["NN", "V", "DET", "NN"]),
    ("the cat saw a bird".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("a girl likes the song".split(), ["DET", "NN", "V", "DET", "NN"]),
    ("dogs chase cats".split(), ["NN", "V", "NN"]),
]
TEST_DATA = [("the girl read a book".split(), ["DET", "NN", "V", "DET", "NN"])]

word_to_ix = {}
for sentence, _ in TRAINING_DATA + TEST_DATA:
    for word in sentence:
        if word not in word_to_ix:
            word_to_ix[word] = len(word_to_ix)
tag_to_ix = {"DET": 0, "NN": 1, "V": 2}

EMBEDDING_DIM = 8
HIDDEN_DIM = 8


def prepare_sequence(seq, to_ix):
    idxs = [to_ix[w] for w in seq]
    return torch.tensor(idxs, dtype=torch.long)


class LSTMTagger(nn.Module):
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.zeros(1, 1, self.hidden_dim), torch.zeros(1, 1, self.hidden_dim))

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, self.hidden = self.lstm(embeds.view(len(sentence), 1, -1), self.hidden)
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        return F.log_softmax(tag_space, dim=1)


model = LSTMTagger(EMBEDDING_DIM, HIDDEN_DIM, len(word_to_ix), len(tag_to_ix))
loss_function = nn.NLLLoss()
optimizer = optim.SGD(model.parameters(), lr=0.1)

for epoch in range(30):
    for sentence, tags in TRAINING_DATA:
        model.zero_grad()
        model.hidden = model.init_hidden()
        sentence_in = prepare_sequence(sentence, word_to_ix)
        targets = prepare_sequence(tags, tag_to_ix)
        tag_scores = model(sentence_in)
        loss = loss_function(tag_scores, targets)
        loss.backward()
        optimizer.step()

with torch.no_grad():
    total = 0.0
    for sentence, tags in TEST_DATA:
        model.hidden = model.init_hidden()
        inputs = prepare_sequence(sentence, word_to_ix)
        tag_scores = model(inputs)
        predicted = [list(tag_to_ix)[i] for i in tag_scores.argmax(dim=1).tolist()]
        print(" ".join(sentence), "->", predicted)
        total += loss_function(tag_scores, prepare_sequence(tags, tag_to_ix)).item()
print(f"final loss {total / len(TEST_DATA):.8f}")
