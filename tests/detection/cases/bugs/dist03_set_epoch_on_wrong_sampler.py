# source: https://github.com/yangkky/distributed_tutorial/issues/5
# area: porting & distributed
# bug: set_epoch is called on the validation sampler only; the training order never changes
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
pin = torch.cuda.is_available()
train_set = TensorDataset(torch.randn(32, 3), torch.randn(32, 1))
val_set = TensorDataset(torch.randn(16, 3), torch.randn(16, 1))
train_sampler = DistributedSampler(train_set, num_replicas=1, rank=0)  # expect: TP403
val_sampler = DistributedSampler(val_set, num_replicas=1, rank=0, shuffle=False)
train_loader = DataLoader(train_set, batch_size=8, sampler=train_sampler, pin_memory=pin)
val_loader = DataLoader(val_set, batch_size=8, sampler=val_sampler, pin_memory=pin)
model = nn.Linear(3, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    val_sampler.set_epoch(epoch)
    for x, y in train_loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
