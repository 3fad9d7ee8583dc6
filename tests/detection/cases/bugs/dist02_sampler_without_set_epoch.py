# source: https://github.com/pytorch/pytorch/issues/31771
# area: porting & distributed
# bug: DistributedSampler shuffles, but set_epoch is never called: every epoch has the same order
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dataset = TensorDataset(torch.randn(40, 4), torch.randn(40, 1))
sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True)  # expect: TP403
loader = DataLoader(dataset, batch_size=10, sampler=sampler, pin_memory=torch.cuda.is_available())
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
