# source: https://github.com/adrinta/MAGNET/issues/6
# area: device placement
# bug: token ids are sampled on the CPU each step and passed to a model on the GPU
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Embedding(50, 8), nn.Flatten(), nn.Linear(8 * 6, 2)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
for step in range(3):
    tokens = torch.randint(0, 50, (4, 6))
    labels = torch.randint(0, 2, (4,), device=device)
    loss = criterion(model(tokens), labels)  # expect: TP102, TP150
    opt.zero_grad()
    loss.backward()
    opt.step()
