from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass
