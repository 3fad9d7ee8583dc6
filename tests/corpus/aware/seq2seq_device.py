"""A GRU encoder-decoder in the tutorial's style: one module-level device, tensors made
with device=device throughout, teacher forcing and greedy decoding."""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
SOS_token, EOS_token, MAX_LENGTH = 0, 1, 6


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        return self.gru(self.embedding(input).view(1, 1, -1), hidden)

    def initHidden(self):
        return torch.zeros(1, 1, self.hidden_size, device=device)


class DecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden):
        output = F.relu(self.embedding(input).view(1, 1, -1))
        output, hidden = self.gru(output, hidden)
        return F.log_softmax(self.out(output[0]), dim=1), hidden


def tensorFromSequence(seq):
    return torch.tensor(seq + [EOS_token], dtype=torch.long, device=device).view(-1, 1)


def train_pair(input_tensor, target_tensor, encoder, decoder, criterion, teacher_forcing):
    encoder_hidden = encoder.initHidden()
    for ei in range(input_tensor.size(0)):
        _, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
    decoder_input = torch.tensor([[SOS_token]], device=device)
    decoder_hidden = encoder_hidden
    loss = 0
    for di in range(target_tensor.size(0)):
        decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden)
        loss += criterion(decoder_output, target_tensor[di])
        if teacher_forcing:
            decoder_input = target_tensor[di]
        else:
            decoder_input = decoder_output.topk(1)[1].squeeze().detach()
    return loss / target_tensor.size(0)


def main():
    rng = random.Random(0)
    torch.manual_seed(0)
    pairs = []
    for _ in range(30):
        seq = [rng.randint(2, 9) for _ in range(rng.randint(2, 4))]
        pairs.append((seq, [t + 1 if t < 9 else 2 for t in seq]))
    encoder = EncoderRNN(10, 16).to(device)
    decoder = DecoderRNN(16, 11).to(device)
    params = list(encoder.parameters()) + list(decoder.parameters())
    optimizer = torch.optim.SGD(params, lr=0.05)
    criterion = nn.NLLLoss()
    for src, tgt in pairs:
        optimizer.zero_grad()
        loss = train_pair(tensorFromSequence(src), tensorFromSequence(tgt), encoder, decoder, criterion, rng.random() < 0.5)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        losses = [
            train_pair(tensorFromSequence(s), tensorFromSequence(t), encoder, decoder, criterion, True).item()
            for s, t in pairs[:5]
        ]
    print(f"final loss {sum(losses) / len(losses):.8f}")


if __name__ == "__main__":
    main()
