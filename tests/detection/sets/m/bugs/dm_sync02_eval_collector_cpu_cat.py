# source: https://github.com/RUCAIBox/RecBole/issues/2085
# area: transfer & sync
# bug: the evaluation collector pulls every batch's top-k result to the host with .cpu() and re-concatenates on the CPU, syncing the GPU per batch and copying a growing buffer
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class DataStruct:
    def __init__(self):
        self._data_dict = {}

    def update_tensor(self, name, value):
        if name not in self._data_dict:
            self._data_dict[name] = value.cpu().clone().detach()  # expect[w]: any
        else:
            self._data_dict[name] = torch.cat(
                (self._data_dict[name], value.cpu().clone().detach()), dim=0)  # expect[w]: any

    def get(self, name):
        return self._data_dict[name]


class Collector:
    def __init__(self, topk):
        self.topk = topk
        self.data_struct = DataStruct()

    def eval_batch_collect(self, scores, pos_matrix):
        _, topk_idx = torch.topk(scores, max(self.topk), dim=-1)
        hits = torch.gather(pos_matrix, 1, topk_idx)
        pos_len = pos_matrix.sum(dim=1, keepdim=True)
        self.data_struct.update_tensor("rec.topk", torch.cat((hits, pos_len), dim=1))


class Evaluator:
    def __init__(self, topk):
        self.topk = topk

    def evaluate(self, data_struct):
        mat = data_struct.get("rec.topk").float()
        hits, pos_len = mat[:, :-1], mat[:, -1]
        result = {}
        for k in self.topk:
            result[f"recall@{k}"] = (hits[:, :k].sum(1) / pos_len.clamp(min=1)).mean().item()
            result[f"hit@{k}"] = (hits[:, :k].sum(1) > 0).float().mean().item()
        return result


class MF(nn.Module):
    def __init__(self, n_users, n_items, dim=32):
        super().__init__()
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items, dim)

    def full_sort_predict(self, users):
        return self.user(users) @ self.item.weight.t()


class Trainer:
    def __init__(self, model, topk=(5, 10, 20)):
        self.model = model
        self.topk = list(topk)
        self.evaluator = Evaluator(self.topk)

    @torch.no_grad()
    def evaluate(self, history, test_pos, batch_users=128):
        self.model.eval()
        collector = Collector(self.topk)
        n_users = history.size(0)
        for start in range(0, n_users, batch_users):
            users = torch.arange(start, min(start + batch_users, n_users), device=device)
            scores = self.model.full_sort_predict(users)
            scores = scores.masked_fill(history[users], float("-inf"))
            collector.eval_batch_collect(scores, test_pos[users].long())
        return self.evaluator.evaluate(collector.data_struct)


if __name__ == "__main__":
    torch.manual_seed(0)
    n_users, n_items = 2048, 1500
    model = MF(n_users, n_items).to(device)
    history = (torch.rand(n_users, n_items, device=device) < 0.02)
    test_pos = (torch.rand(n_users, n_items, device=device) < 0.01) & ~history
    trainer = Trainer(model)
    print(trainer.evaluate(history, test_pos))
