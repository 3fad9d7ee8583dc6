import torch

a = torch.Tensor(3, 4)
b = torch.FloatTensor([1.0, 2.0])
c = torch.cuda.LongTensor([1, 2])


def loss_targets(logits, targets, device):
    targets = targets.to(device)
    flat = targets.reshape(-1).type(torch.LongTensor)  # a CPU type: back to the host
    return torch.nn.functional.cross_entropy(logits, flat)
