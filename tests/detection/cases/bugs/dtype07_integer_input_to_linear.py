# source: https://openillumi.com/en/en-fix-mat1-mat2-dtype-error-pytorch
# area: dtype
# bug: integer counts are fed straight into a Linear layer
import torch
from torch import nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(5, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(3):
    counts = torch.randint(0, 10, (12, 5), device=device)
    loss = model(counts).pow(2).mean()  # expect: TP303
    opt.zero_grad()
    loss.backward()
    opt.step()
