# source: https://github.com/PaccMann/paccmann_datasets/issues/105
# area: transfer & sync
# bug: the dataset moves every single sample to the GPU inside __getitem__, so each batch costs batch_size tiny host->device copies plus device-side collation
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

ALPHABET = ["<pad>", "<start>", "<stop>", "C", "c", "N", "n", "O", "o", "S", "F", "Cl", "(", ")", "=", "1", "2"]


class SMILESLanguage:
    def __init__(self, alphabet=ALPHABET):
        self.token_to_index = {t: i for i, t in enumerate(alphabet)}

    def tokenize(self, smiles):
        tokens, i = [], 0
        while i < len(smiles):
            two = smiles[i:i + 2]
            if two in self.token_to_index:
                tokens.append(two)
                i += 2
            else:
                tokens.append(smiles[i])
                i += 1
        return tokens

    def smiles_to_token_indexes(self, smiles, padding_length):
        ids = [1] + [self.token_to_index[t] for t in self.tokenize(smiles)] + [2]
        ids = ids[:padding_length]
        return ids + [0] * (padding_length - len(ids))


class SMILESDataset(Dataset):
    def __init__(self, smiles, targets, padding_length=48, device=torch.device("cpu")):
        self.smiles = smiles
        self.targets = targets
        self.padding_length = padding_length
        self.device = device
        self.language = SMILESLanguage()

    def __len__(self):
        return len(self.smiles)

    def __getitem__(self, index):
        ids = self.language.smiles_to_token_indexes(self.smiles[index], self.padding_length)
        token_tensor = torch.tensor(ids, dtype=torch.long)
        target = torch.tensor([self.targets[index]], dtype=torch.float)
        return token_tensor.to(self.device), target.to(self.device)  # expect: any


class SMILESRegressor(nn.Module):
    def __init__(self, vocab=len(ALPHABET), dim=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.conv = nn.Sequential(nn.Conv1d(dim, dim, 5, padding=2), nn.ReLU(), nn.Conv1d(dim, dim, 5, padding=2))
        self.head = nn.Linear(dim, 1)

    def forward(self, ids):
        h = self.conv(self.emb(ids).transpose(1, 2)).amax(dim=2)
        return self.head(h)


def random_smiles(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    pieces = ["C", "c1ccccc1", "N", "O", "C(=O)", "Cl", "F", "S", "CC", "OC"]
    out = []
    for _ in range(n):
        k = int(torch.randint(3, 10, (1,), generator=g))
        out.append("".join(pieces[int(j)] for j in torch.randint(0, len(pieces), (k,), generator=g)))
    return out


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    smiles = random_smiles(512)
    targets = [s.count("c") * 0.1 + s.count("O") * 0.3 for s in smiles]
    dataset = SMILESDataset(smiles, targets, device=device)
    loader = DataLoader(dataset, batch_size=32, shuffle=True, num_workers=0)
    model = SMILESRegressor().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        total = torch.zeros((), device=device)
        for ids, y in loader:
            loss = nn.functional.mse_loss(model(ids), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += loss.detach() * ids.shape[0]
        print(f"epoch {epoch}: mse {(total / len(dataset)).item():.4f}")


if __name__ == "__main__":
    main()
