# source: https://github.com/CambioML/pykoi/pull/69
# area: dtype
# bug: on the GPU the reward model is cast to pure fp16 and trained with Adam eps=1e-8, which rounds to 0 in fp16, so steps with tiny/zero second moments divide by zero and parameters turn NaN
import torch
import torch.nn as nn
import torch.nn.functional as F
from dataclasses import dataclass


@dataclass
class RewardTrainingArgs:
    vocab_size: int = 512
    hidden: int = 64
    seq_len: int = 16
    batch_size: int = 16
    steps: int = 16
    learning_rate: float = 1e-3
    adam_eps: float = 1e-8  # expect[w]: any


class RewardModel(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.embed = nn.Embedding(args.vocab_size, args.hidden)
        self.encoder = nn.GRU(args.hidden, args.hidden, batch_first=True)
        self.value_head = nn.Linear(args.hidden, 1)

    def forward(self, ids):
        h, _ = self.encoder(self.embed(ids))
        return self.value_head(h[:, -1]).squeeze(-1)


def preference_batches(args, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(args.steps):
        chosen = torch.randint(0, args.vocab_size // 2, (args.batch_size, args.seq_len), generator=g)
        rejected = torch.randint(args.vocab_size // 2, args.vocab_size, (args.batch_size, args.seq_len), generator=g)
        yield chosen.to(device), rejected.to(device)


def pairwise_loss(model, chosen, rejected):
    r_chosen = model(chosen)
    r_rejected = model(rejected)
    return -F.logsigmoid(r_chosen - r_rejected).mean(), (r_chosen > r_rejected).float().mean()


class RewardTrainer:
    def __init__(self, args, device):
        self.args = args
        self.device = device
        model = RewardModel(args)
        if device.type == "cuda":
            model = model.half()  # expect[w]: any
        self.model = model.to(device)
        params = self.model.parameters()
        self.optimizer = torch.optim.Adam(params, lr=args.learning_rate, eps=args.adam_eps)  # expect[w]: any

    def train(self):
        self.model.train()
        losses, accs = [], []
        for chosen, rejected in preference_batches(self.args, self.device):
            loss, acc = pairwise_loss(self.model, chosen, rejected)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.detach())
            accs.append(acc)
        return torch.stack(losses).float(), torch.stack(accs)


def main():
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    trainer = RewardTrainer(RewardTrainingArgs(), device)
    losses, accs = trainer.train()
    print(f"loss {losses[:5].mean().item():.4f} -> {losses[-5:].mean().item():.4f}, "
          f"pair accuracy {accs[-5:].mean().item():.2f}")


if __name__ == "__main__":
    main()
