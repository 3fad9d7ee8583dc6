import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
lstm = nn.LSTM(3, 5, batch_first=True).to(device)
padded, lengths = torch.randn(3, 6, 3), torch.tensor([6, 4, 2])
padded, lengths = padded.to(device), lengths.to(device)
packed = pack_padded_sequence(padded, lengths, batch_first=True)
other = nn.utils.rnn.pack_padded_sequence(padded, lengths=lengths.cuda(), batch_first=True)
