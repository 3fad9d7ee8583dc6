"""A GRU encoder-decoder with attention that learns to reverse digit strings.

Training uses teacher forcing some of the time; decoding is greedy, one token at a time,
starting from a start-of-sequence tensor; the encoder outputs are gathered in a buffer.
"""

import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

SOS_token = 0
EOS_token = 1
MAX_LENGTH = 7
N_TOKENS = 12  # SOS, EOS and the digits 0-9


def make_pairs(n, rng):
    pairs = []
    for _ in range(n):
        digits = [rng.randint(2, 11) for _ in range(rng.randint(2, 5))]
        pairs.append((digits, digits[::-1]))
    return pairs


def tensor_from_digits(digits):
    return torch.tensor(digits + [EOS_token], dtype=torch.long).view(-1, 1)


def tensors_from_pair(pair):
    return tensor_from_digits(pair[0]), tensor_from_digits(pair[1])


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)

    def forward(self, input, hidden):
        embedded = self.embedding(input).view(1, 1, -1)
        return self.gru(embedded, hidden)

    def init_hidden(self):
        return torch.zeros(1, 1, self.hidden_size)


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size, max_length=MAX_LENGTH):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attn = nn.Linear(hidden_size * 2, max_length)
        self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input).view(1, 1, -1)
        attn_weights = F.softmax(self.attn(torch.cat((embedded[0], hidden[0]), 1)), dim=1)
        attn_applied = torch.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
        output = torch.cat((embedded[0], attn_applied[0]), 1)
        output = F.relu(self.attn_combine(output).unsqueeze(0))
        output, hidden = self.gru(output, hidden)
        return F.log_softmax(self.out(output[0]), dim=1), hidden


def run_pair(encoder, decoder, input_tensor, target_tensor, criterion, teacher_forcing):
    encoder_hidden = encoder.init_hidden()
    encoder_outputs = torch.zeros(MAX_LENGTH, encoder.hidden_size)
    for ei in range(input_tensor.size(0)):
        encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
        encoder_outputs[ei] = encoder_output[0, 0]

    decoder_input = torch.tensor([[SOS_token]])
    decoder_hidden = encoder_hidden
    loss = 0
    for di in range(target_tensor.size(0)):
        decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
        loss += criterion(decoder_output, target_tensor[di])
        if teacher_forcing:
            decoder_input = target_tensor[di]
        else:
            topv, topi = decoder_output.topk(1)
            decoder_input = topi.squeeze().detach()
    return loss / target_tensor.size(0)


def greedy_decode(encoder, decoder, digits):
    with torch.no_grad():
        input_tensor = tensor_from_digits(digits)
        encoder_hidden = encoder.init_hidden()
        encoder_outputs = torch.zeros(MAX_LENGTH, encoder.hidden_size)
        for ei in range(input_tensor.size(0)):
            encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] += encoder_output[0, 0]
        decoder_input = torch.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        decoded = []
        for _ in range(MAX_LENGTH):
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
            topv, topi = decoder_output.data.topk(1)
            if topi.item() == EOS_token:
                break
            decoded.append(topi.item())
            decoder_input = topi.squeeze().detach()
        return decoded


def main():
    rng = random.Random(5)
    torch.manual_seed(5)
    pairs = make_pairs(60, rng)
    encoder = EncoderRNN(N_TOKENS, 24)
    decoder = AttnDecoderRNN(24, N_TOKENS)
    enc_opt = optim.SGD(encoder.parameters(), lr=0.05)
    dec_opt = optim.SGD(decoder.parameters(), lr=0.05)
    criterion = nn.NLLLoss()
    for pair in pairs:
        input_tensor, target_tensor = tensors_from_pair(pair)
        enc_opt.zero_grad()
        dec_opt.zero_grad()
        loss = run_pair(encoder, decoder, input_tensor, target_tensor, criterion, rng.random() < 0.5)
        loss.backward()
        enc_opt.step()
        dec_opt.step()
    print("reverse of [3, 4, 5]:", greedy_decode(encoder, decoder, [3, 4, 5]))
    with torch.no_grad():
        losses = [
            run_pair(encoder, decoder, *tensors_from_pair(p), criterion, True).item()
            for p in make_pairs(6, random.Random(99))
        ]
    print(f"final loss {sum(losses) / len(losses):.8f}")


if __name__ == "__main__":
    main()
