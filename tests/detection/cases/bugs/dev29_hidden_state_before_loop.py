# source: https://forums.fast.ai/t/rnn-hidden-state-initializations-chapter-12/91887
# area: device placement
# bug: the initial GRU state is created on the CPU before the loop and fed to a GPU model
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
rnn = nn.GRU(4, 8, batch_first=True).to(device)
opt = torch.optim.Adam(rnn.parameters(), lr=1e-3)
h0 = torch.zeros(1, 2, 8)
for _ in range(3):
    seq = torch.randn(2, 5, 4, device=device)
    out, h = rnn(seq, h0)  # expect: TP102, TP150
    loss = out.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
