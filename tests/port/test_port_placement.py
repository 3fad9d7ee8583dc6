"""The port follows values where they go: each class of failure that real programs showed.

Each test is a small program in the shape of public code; the assertions pin where the port
moves (or leaves) each value. The corpus (tests/corpus) runs whole programs end to end.
"""

from __future__ import annotations

import textwrap

from torchport.port import PortOptions, port_source, port_sources


def port(code: str, **options: object) -> str:
    result = port_source(textwrap.dedent(code), "prog.py", PortOptions(**options))  # type: ignore[arg-type]
    again = port_source(result.after, "prog.py", PortOptions(**options))  # type: ignore[arg-type]
    assert again.after == result.after, "porting ported code must change nothing"
    compile(result.after, "prog.py", "exec")
    return result.after


# -- 1. tensors that meet the model's outputs by another path than the loop's batch ------------


def test_targets_a_helper_compares_with_predictions_move_where_they_are_made() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn

        def accuracy(logits, targets):
            return (logits.argmax(dim=1) == targets).float().mean().item()

        def main():
            model = nn.Linear(4, 3)
            x = torch.randn(16, 4)
            y = torch.randint(0, 3, (16,))
            print(accuracy(model(x), y))
        """
    )
    assert "y = torch.randint(0, 3, (16,)).to(device)" in after
    assert "x = torch.randn(16, 4).to(device)" in after
    assert "def accuracy(logits, targets):\n" in after  # the helper itself is left alone


def test_a_dataset_tensor_evaluated_whole_moves_at_the_call_not_at_its_source() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        def evaluate(model, X_val, y_val):
            return nn.functional.cross_entropy(model(X_val), y_val).item()

        X = torch.randn(32, 4)
        y = torch.randint(0, 2, (32,))
        loader = DataLoader(TensorDataset(X, y), batch_size=8)
        model = nn.Linear(4, 2)
        for xb, yb in loader:
            model(xb).sum().backward()
        print(evaluate(model, X, y))
        """
    )
    assert "X = torch.randn(32, 4)\n" in after  # pinned: the DataLoader reads it on the host
    assert "print(evaluate(model, X.to(device), y.to(device)))" in after


# -- 2. factories outside forward ----------------------------------------------------------------


def test_gan_noise_and_real_fake_targets_are_made_on_the_device() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn

        def train(G, D, real_batches, latent=8):
            criterion = nn.BCELoss()
            for real in real_batches:
                noise = torch.randn(real.size(0), latent)
                fake = G(noise)
                ones = torch.ones(real.size(0), 1)
                zeros = torch.full((real.size(0), 1), 0.0)
                loss = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
                loss.backward()

        G = nn.Sequential(nn.Linear(8, 4))
        D = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
        train(G, D, [torch.randn(5, 4) for _ in range(3)])
        """
    )
    assert "noise = torch.randn(real.size(0), latent, device=device)" in after
    assert "ones = torch.ones(real.size(0), 1, device=device)" in after
    assert "zeros = torch.full((real.size(0), 1), 0.0, device=device)" in after
    assert "train(G, D, [torch.randn(5, 4, device=device) for _ in range(3)])" in after


# -- 3. arguments that must stay on the host ------------------------------------------------------


def test_lengths_of_a_packed_sequence_stay_on_the_host() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(4, 8, batch_first=True)

            def forward(self, x, lengths):
                return self.rnn(pack_padded_sequence(x, lengths, batch_first=True))[1]

        model = Encoder()
        x = torch.randn(3, 5, 4)
        lengths = torch.tensor([5, 3, 2])
        print(model(x, lengths).shape)
        """
    )
    assert "x = torch.randn(3, 5, 4).to(device)" in after
    assert "lengths = torch.tensor([5, 3, 2])\n" in after


def test_lengths_moved_with_a_whole_batch_are_copied_back_where_packing_needs_them() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn
        from torch.nn.utils.rnn import pack_padded_sequence

        class Encoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.rnn = nn.GRU(4, 8, batch_first=True)

            def forward(self, batch):
                packed = pack_padded_sequence(batch["x"], batch["lengths"], batch_first=True)
                return self.rnn(packed)[1]

        def train(model, loader):
            for batch in loader:
                model(batch).sum().backward()
        """
    )
    assert "batch = to_device(batch, device)" in after
    assert 'pack_padded_sequence(batch["x"], torch.as_tensor(batch["lengths"]).cpu(),' in after


def test_numpy_and_sklearn_style_metrics_get_host_copies() -> None:
    after = port(
        """
        import numpy as np
        import torch
        import torch.nn as nn
        from sklearn.metrics import accuracy_score

        model = nn.Linear(4, 2)
        x = torch.randn(8, 4)
        preds = model(x).argmax(dim=1)
        print(accuracy_score(np.zeros(8), preds), np.mean(preds.numpy()))
        """
    )
    assert "accuracy_score(np.zeros(8), preds.cpu())" in after
    assert "np.mean(preds.detach().cpu().numpy())" in after


# -- 4. helpers that build tensors from scratch --------------------------------------------------


def test_a_helper_called_from_init_becomes_a_buffer_and_from_forward_gets_the_device() -> None:
    after = port(
        """
        import math
        import torch
        import torch.nn as nn

        def positional_encoding(n, d):
            pe = torch.zeros(n, d)
            pos = torch.arange(n).unsqueeze(1)
            pe[:, 0::2] = torch.sin(pos * math.pi / d)
            return pe

        def causal_mask(n):
            return torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)

        class Block(nn.Module):
            def __init__(self, d=8):
                super().__init__()
                self.pe = positional_encoding(16, d)
                self.attn = nn.MultiheadAttention(d, 2, batch_first=True)

            def forward(self, x):
                x = x + self.pe[: x.size(1)]
                return self.attn(x, x, x, attn_mask=causal_mask(x.size(1)))[0]

        model = Block()
        print(model(torch.randn(2, 5, 8)).shape)
        """
    )
    assert 'self.register_buffer("pe", positional_encoding(16, d), persistent=False)' in after
    assert "def causal_mask(n, device=None):" in after
    assert "torch.ones(n, n, dtype=torch.bool, device=device)" in after
    assert "attn_mask=causal_mask(x.size(1), device=x.device)" in after
    assert "pe = torch.zeros(n, d)\n" in after  # made on the host; the buffer moves with the model


# -- 5. rewrites that must not break code that ran ----------------------------------------------


def test_loader_keyword_arguments_already_given_are_not_given_twice() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        kwargs = {"batch_size": 4, "pin_memory": True}
        loader = DataLoader(TensorDataset(torch.randn(8, 2)), **kwargs)
        model = nn.Linear(2, 1)
        for (x,) in loader:
            model(x)
        """
    )
    assert "DataLoader(TensorDataset(torch.randn(8, 2)), **kwargs)" in after
    assert "x = x.to(device, non_blocking=True)" in after


def test_non_tensors_are_not_given_to() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 1)
                self.opt = torch.optim.SGD(self.parameters(), lr=0.1)
                self.steps = 0

            def forward(self, a, b, scale):
                self.steps += 1
                return self.fc(a + b) * scale

        net = Net()
        inputs = (torch.randn(2, 3), torch.randn(2, 3))
        print(net(*inputs, 2.0))
        """
    )
    assert "self.opt = torch.optim.SGD(self.parameters(), lr=0.1)" in after  # not a buffer
    assert "inputs = (torch.randn(2, 3).to(device), torch.randn(2, 3).to(device))" in after
    assert "2.0.to(" not in after and "scale.to(" not in after


def test_device_aware_code_is_left_as_it_was() -> None:
    code = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(3, 1).to(device)
        kwargs = {"num_workers": 1, "pin_memory": True} if device.type == "cuda" else {}
        x = torch.randn(4, 3).to(device)
        print(model(x).sum().item())
        """
    )
    assert port_source(code, "aware.py", PortOptions()).after == code


def test_torch_is_imported_once_and_comments_stay_where_they_were() -> None:
    after = port(
        """
        import torch.nn as nn  # layers
        from torch import optim

        # the model, as small as it gets
        model = nn.Linear(3, 1)  # keep this comment here
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        """
    )
    assert after.count("import torch\n") == 1
    assert "model = nn.Linear(3, 1).to(device)  # keep this comment here" in after
    assert "# the model, as small as it gets\nmodel =" in after


# -- 6. data that does not come from a DataLoader -------------------------------------------------


def test_a_corpus_batchified_once_moves_once() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn

        def batchify(data, bsz):
            n = data.size(0) // bsz
            return data[: n * bsz].view(bsz, -1).t().contiguous()

        def get_batch(source, i, bptt=4):
            return source[i : i + bptt], source[i + 1 : i + 1 + bptt].reshape(-1)

        ids = torch.randint(0, 10, (200,))
        train_data = batchify(ids, 4)
        model = nn.Embedding(10, 10)
        for i in range(0, train_data.size(0) - 1, 4):
            data, targets = get_batch(train_data, i)
            loss = nn.functional.cross_entropy(model(data).view(-1, 10), targets)
        """
    )
    assert "ids = torch.randint(0, 10, (200,)).to(device)" in after
    assert "data, targets = get_batch(train_data, i)\n" in after  # nothing moved per step


def test_layers_appended_to_a_plain_list_become_a_module_list() -> None:
    after = port(
        """
        import torch
        import torch.nn as nn

        class MLP(nn.Module):
            def __init__(self, sizes):
                super().__init__()
                self.layers = []
                for a, b in zip(sizes, sizes[1:]):
                    self.layers.append(nn.Linear(a, b))
                self.head = []
                self.head = self.head + [nn.Linear(sizes[-1], 1)]

            def forward(self, x):
                for layer in self.layers + self.head:
                    x = layer(x)
                return x

        model = MLP([4, 8, 8])
        print(model(torch.randn(2, 4)).shape)
        """
    )
    assert "self.layers = nn.ModuleList()" in after
    assert "self.head = nn.ModuleList()" in after
    assert "self.head = self.head + [nn.Linear(sizes[-1], 1)]" in after


def test_files_of_a_package_are_ported_together() -> None:
    model = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        def noise_like(h):
            return torch.randn(h.shape) * 0.1

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                return self.fc(x) + noise_like(x)
        """
    )
    train = textwrap.dedent(
        """
        import torch
        from pkg.model import Net

        if __name__ == "__main__":
            net = Net()
            print(net(torch.randn(2, 3)).sum().item())
        """
    )
    results = port_sources(
        [("pkg/__init__.py", ""), ("pkg/model.py", model), ("pkg/train.py", train)], PortOptions()
    )
    ported = {r.path: r.after for r in results}
    assert "torch.randn(h.shape, device=h.device)" in ported["pkg/model.py"]
    assert "net = Net().to(device)" in ported["pkg/train.py"]
    assert "print(net(torch.randn(2, 3).to(device)).sum().item())" in ported["pkg/train.py"]
