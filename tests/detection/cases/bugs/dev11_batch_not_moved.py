# source: http://www.kouhan.cn/en/article/00014955
# area: device placement
# bug: the model is moved to the GPU but the batches from the DataLoader are not
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(64, 10), torch.randint(0, 3, (64,)))
loader = DataLoader(data, batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3)).to(device)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for inputs, labels in loader:
        outputs = model(inputs)  # expect[b]: TP102, TP150
        loss = criterion(outputs, labels)  # expect[b]: TP102, TP150
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
