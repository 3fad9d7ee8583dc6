# source: https://forums.fast.ai/t/rnn-hidden-state-initializations-chapter-12/91887
# area: device placement
# bug: init_hidden() builds the LSTM state with torch.zeros on the CPU; forward calls it each batch
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SeqClassifier(nn.Module):
    def __init__(self, n_in=5, hidden=16, layers=1):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.lstm = nn.LSTM(n_in, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, 2)

    def init_hidden(self, batch):
        h = torch.zeros(self.layers, batch, self.hidden)  # expect[h]: TP103
        c = torch.zeros(self.layers, batch, self.hidden)  # expect[h]: TP103
        return h, c

    def forward(self, x):
        state = self.init_hidden(x.shape[0])
        seq, _ = self.lstm(x, state)  # expect[h]: TP150
        return self.out(seq[:, -1])


model = SeqClassifier().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
for _ in range(3):
    x = torch.randn(8, 7, 5, device=device)
    y = torch.randint(0, 2, (8,), device=device)
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
