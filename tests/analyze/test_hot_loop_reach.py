"""How `check` finds the hot loop and how loud a sync there is.

A loop in ``def train(model, loader, ...)`` is hot by the names its parameters carry, and the
methods of the file's own objects called from it (a meter's ``update``) are hot too. One
value read a step is a suggestion (info); reads in a loop inside the step are a warning.
"""

from __future__ import annotations

import textwrap

from torchport.analyze.engine import analyze
from torchport.findings import Finding, Severity

HEAD = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Linear(4, 2).to(device)
"""


def _findings(body: str, code: str) -> list[Finding]:
    source = HEAD + textwrap.dedent(body)
    return [f for f in analyze(source, "t.py", lambda c: True) if f.code == code]


def _line(body: str, marker: str) -> int:
    source = HEAD + textwrap.dedent(body)
    return next(i for i, text in enumerate(source.splitlines(), 1) if marker in text)


TRAIN_WITH_PARAMETERS = """\
def train(model, loader, optimizer):
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        torch.cuda.synchronize()  # here
"""


def test_a_loop_over_a_loader_parameter_is_hot() -> None:
    [found] = _findings(TRAIN_WITH_PARAMETERS, "TP207")
    assert found.location is not None
    assert found.location.line == _line(TRAIN_WITH_PARAMETERS, "# here")


def test_a_loop_that_calls_a_model_parameter_is_hot() -> None:
    body = TRAIN_WITH_PARAMETERS.replace("for x, y in loader:", "for x, y in batches:")
    body = body.replace("loss.backward()", "pass")
    assert len(_findings(body, "TP207")) == 1


def test_a_loop_that_calls_a_dcgan_style_netg_parameter_is_hot() -> None:
    body = TRAIN_WITH_PARAMETERS.replace("for x, y in loader:", "for x, y in batches:")
    body = body.replace("def train(model,", "def train(netG,").replace("model(x", "netG(x")
    body = body.replace("loss.backward()", "pass")
    assert len(_findings(body, "TP207")) == 1


def test_a_loop_over_a_list_of_numbers_in_a_plain_function_is_not_hot() -> None:
    body = """\
    def tally(values):
        for v in values:
            torch.cuda.synchronize()
    """
    assert _findings(body, "TP207") == []


METER = """\
class Timer:
    def tick(self):
        torch.cuda.synchronize()  # here


def train(loader, timer):
    for x, y in loader:
        model(x.to(device)).sum().backward()
        timer.tick()
"""


def test_a_method_of_the_files_own_object_called_from_the_hot_loop_is_hot() -> None:
    [found] = _findings(METER, "TP207")
    assert found.location is not None and found.location.line == _line(METER, "# here")


def test_an_unknown_receiver_is_not_followed_when_two_classes_share_the_method_name() -> None:
    body = (
        METER
        + """\


class Clock:
    def tick(self):
        torch.cuda.synchronize()
"""
    )
    assert _findings(body, "TP207") == []


ONCE_A_STEP = """\
total = 0.0
for x, y in DataLoader([(torch.randn(4), 1)] * 8, batch_size=4):
    loss = model(x.to(device)).sum()
    loss.backward()
    total += loss.item()
"""


def test_one_read_a_step_is_a_suggestion() -> None:
    [found] = _findings(ONCE_A_STEP, "TP204")
    assert found.severity is Severity.INFO


def test_reads_in_a_loop_inside_the_step_are_a_warning() -> None:
    body = ONCE_A_STEP + "    hits = [loss[i].item() for i in range(2)]\n"
    body += "    for i in range(2):\n        print(loss[i].item())\n"
    severities = [f.severity for f in _findings(body, "TP204")]
    assert severities == [Severity.INFO, Severity.WARNING, Severity.WARNING]


LOADER = """\
loader = DataLoader([(torch.randn(4), 1)] * 8, batch_size=4)
for x, y in loader:
    model(x.to(device)).sum().backward()
"""


def test_an_unpinned_loader_is_a_suggestion_unless_copies_are_asked_to_overlap() -> None:
    [plain] = _findings(LOADER, "TP201")
    assert plain.severity is Severity.INFO
    overlapping = LOADER.replace("x.to(device)", "x.to(device, non_blocking=True)")
    [asked] = _findings(overlapping, "TP201")
    assert asked.severity is Severity.WARNING


def test_a_method_called_every_n_steps_is_not_followed() -> None:
    sparse = "        if step % 10 == 0:\n            timer.tick()"
    body = METER.replace("        timer.tick()", sparse)
    body = body.replace("for x, y in loader:", "for step, (x, y) in enumerate(loader):")
    assert _findings(body, "TP207") == []


def test_copies_back_to_the_host_do_not_make_an_unpinned_loader_a_warning() -> None:
    body = LOADER + '    print(x.to("cpu", non_blocking=True))\n'
    [plain] = _findings(body, "TP201")
    assert plain.severity is Severity.INFO


SUBMODULES = """\
class Attend(torch.nn.Module):
    def forward(self, q, k):
        scores = q @ k.transpose(-1, -2)
        torch.cuda.synchronize()  # attend
        return scores


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attend = Attend()

    def forward(self, x):
        return self.attend(x, x)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block() for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def train(loader, optimizer):
    net = Net().to(device)
    for x in loader:
        net(x.to(device)).sum().backward()
        optimizer.step()
"""


def test_the_forward_of_submodules_and_of_layers_in_a_module_list_is_hot() -> None:
    [found] = _findings(SUBMODULES, "TP207")
    assert found.location is not None and found.location.line == _line(SUBMODULES, "# attend")


TRAINER = """\
class Trainer:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def update(self, x):
        model(x.to(device)).sum().backward()
        torch.cuda.synchronize()  # each step
        self.optimizer.step()

    def evaluate(self, x):
        return model(x.to(device)).sum()

    def fit(self, data, steps):
        for _ in range(steps):  # update() makes one training step
            self.update(data)

    def report(self, data, epochs):
        for _ in range(epochs):  # evaluate() only calls the model: once an epoch
            torch.cuda.synchronize()
            print(self.evaluate(data))
"""


def test_a_loop_calling_a_step_function_is_hot_and_one_calling_an_evaluation_is_not() -> None:
    [found] = _findings(TRAINER, "TP207")
    assert found.location is not None and found.location.line == _line(TRAINER, "# each step")


CALLBACKS = """\
class Callback:
    def on_batch_end(self, loss):
        pass


class Timing(Callback):
    def on_batch_end(self, loss):
        torch.cuda.synchronize()  # here


def fit(loader, optimizer, callbacks):
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        optimizer.step()
        for cb in callbacks:
            cb.on_batch_end(loss.detach())
"""


def test_a_callback_called_from_the_loop_through_an_unknown_list_is_hot() -> None:
    [found] = _findings(CALLBACKS, "TP207")
    assert found.location is not None and found.location.line == _line(CALLBACKS, "# here")


GRADIENT_HOOK = """\
class GradWatch:
    def __init__(self, net):
        for p in net.parameters():
            p.register_hook(self._make_hook())

    def _make_hook(self):
        def hook(grad):
            torch.cuda.synchronize()  # here
            return grad

        return hook


watch = GradWatch(model)
"""


def test_a_gradient_hook_runs_at_every_backward_and_is_hot() -> None:
    [found] = _findings(GRADIENT_HOOK, "TP207")
    assert found.location is not None and found.location.line == _line(GRADIENT_HOOK, "# here")
