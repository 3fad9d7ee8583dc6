# twin of: bugs/dev05_init_hidden_method.py
# area: device placement
# correct: init_hidden allocates the state on the device of the input
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class SeqClassifier(nn.Module):
    def __init__(self, n_in=5, hidden=16, layers=1):
        super().__init__()
        self.hidden, self.layers = hidden, layers
        self.lstm = nn.LSTM(n_in, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, 2)

    def init_hidden(self, x):
        h = x.new_zeros(self.layers, x.shape[0], self.hidden)
        c = torch.zeros(self.layers, x.shape[0], self.hidden, device=x.device)
        return h, c

    def forward(self, x):
        state = self.init_hidden(x)
        seq, _ = self.lstm(x, state)
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
