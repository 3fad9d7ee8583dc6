from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            pass
