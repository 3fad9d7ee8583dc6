from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            pass
    eval_sampler = DistributedSampler(dataset, shuffle=False)


def train_via_loader(dataset, epochs):
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset))
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)


def train_named_loader(dataset, epochs):
    sampler = DistributedSampler(dataset)
    train_loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        train_loader.sampler.set_epoch(epoch)


class EpochLoaders:
    def __init__(self, dataset):
        self.dataset = dataset

    def _sampler(self, epoch=0):
        picker = DistributedSampler(self.dataset, shuffle=True)
        picker.set_epoch(epoch)
        return picker

    def loader(self, epoch):
        return DataLoader(self.dataset, sampler=self._sampler(epoch))

    def evaluation_loader(self):
        return DataLoader(self.dataset, sampler=self._sampler())  # no epoch here: one order
