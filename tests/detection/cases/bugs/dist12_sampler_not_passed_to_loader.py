# source: https://github.com/kan-bayashi/ParallelWaveGAN/issues/177
# area: porting & distributed
# bug: a DistributedSampler is created but the DataLoader shuffles the full dataset on every rank
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dataset = TensorDataset(torch.randn(24, 2), torch.randn(24, 1))
sampler = DistributedSampler(dataset, num_replicas=1, rank=0)  # expect[s]: TP407
loader = DataLoader(dataset, batch_size=6, shuffle=True, pin_memory=torch.cuda.is_available())  # expect[s]: any
model = nn.Linear(2, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    sampler.set_epoch(epoch)
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
