# source: https://github.com/pytorch/tutorials/pull/2983
# area: transfer & sync
# bug: batches are copied to the GPU every step from pageable memory (no pin_memory)
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = TensorDataset(torch.randn(96, 3, 8, 8), torch.randint(0, 5, (96,)))
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=0)  # expect: TP201
    model = nn.Sequential(nn.Flatten(), nn.Linear(192, 5)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = nn.functional.cross_entropy(model(images), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
