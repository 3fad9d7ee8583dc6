# twin of: bugs/dist02_sampler_without_set_epoch.py
# area: porting & distributed
# correct: set_epoch is called at the start of every epoch
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dataset = TensorDataset(torch.randn(40, 4), torch.randn(40, 1))
sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True)
loader = DataLoader(dataset, batch_size=10, sampler=sampler, pin_memory=torch.cuda.is_available())
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
