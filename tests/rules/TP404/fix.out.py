from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

sampler = DistributedSampler(range(8))
loader = DataLoader(range(8), batch_size=2, sampler=sampler)
