# source: https://github.com/pytorch/pytorch/issues/43227
# area: device placement
# bug: pack_padded_sequence needs CPU lengths, but the lengths were moved to the GPU with the batch
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
lstm = nn.LSTM(3, 5, batch_first=True).to(device)
opt = torch.optim.Adam(lstm.parameters(), lr=1e-3)
for _ in range(2):
    padded = torch.randn(3, 6, 3)
    lengths = torch.tensor([6, 4, 2])
    padded, lengths = padded.to(device), lengths.to(device)
    packed = pack_padded_sequence(padded, lengths, batch_first=True)  # expect: any
    out, _ = lstm(packed)
    seq, _ = pad_packed_sequence(out, batch_first=True)
    loss = seq.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
