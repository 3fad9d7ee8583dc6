from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass


def handed_on(dataset):
    sampler = DistributedSampler(dataset)
    return make_loader(dataset, sampler)


def make_loader(dataset, sampler):
    return DataLoader(dataset, sampler=sampler)
