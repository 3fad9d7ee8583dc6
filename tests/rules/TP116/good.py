import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
padded, lengths = torch.randn(3, 6, 3), torch.tensor([6, 4, 2])
padded = padded.to(device)
packed = pack_padded_sequence(padded, lengths, batch_first=True)
again = pack_padded_sequence(padded, lengths.to(device).cpu(), batch_first=True)
listed = pack_padded_sequence(padded, [6, 4, 2], batch_first=True)
