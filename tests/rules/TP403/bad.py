from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(dataset, epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            pass
    # the comment says set_epoch, but no code calls it


def train_two(train_set, val_set, epochs):
    train_sampler = DistributedSampler(train_set)
    val_sampler = DistributedSampler(val_set)
    train_loader = DataLoader(train_set, sampler=train_sampler)
    val_loader = DataLoader(val_set, sampler=val_sampler)
    for epoch in range(epochs):
        val_sampler.set_epoch(epoch)  # the training sampler is never reshuffled
        for batch in train_loader:
            pass


class EpochLoaders:
    def __init__(self, dataset):
        self.dataset = dataset

    def _sampler(self, epoch=0):
        picker = DistributedSampler(self.dataset, shuffle=True)
        picker.set_epoch(epoch)
        return picker

    def loader(self, epoch):
        return DataLoader(self.dataset, sampler=self._sampler())
