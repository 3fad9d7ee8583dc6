"""``--distributed``: turn a ported single-device script into a DDP script for torchrun.

Runs on the output of the single-device port, in a file that selects a device: that selection
becomes the ``LOCAL_RANK`` device; the process group is set up from torchrun's environment around
the ``__main__`` block (nccl on CUDA, gloo on the CPU); training loaders get a
``DistributedSampler`` and a per-process share of the global batch, their epoch loops call
``set_epoch``; trained models are wrapped in DDP; printing and checkpointing happen on rank 0.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import PositionProvider, QualifiedNameProvider

from torchport.findings import Finding, Location
from torchport.port import snippets
from torchport.port.facts import FactsVisitor, qualified
from torchport.port.layout import ensure_imports
from torchport.port.options import PortOptions
from torchport.port.snippets import Statement
from torchport.rules.device import UndecidableDevicePlacement

INIT = 'dist.init_process_group(backend="nccl" if {device}.type == "cuda" else "gloo")'
WRAP = '{name} = DDP({name}, device_ids=[LOCAL_RANK] if {device}.type == "cuda" else None)'
RANK_ZERO = "RANK == 0"
EVAL_WORDS = ("val", "test", "eval")


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _is_selection(statement: cst.BaseStatement) -> str | None:
    """The device name when ``statement`` is the port's device selection."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Assign) or not isinstance(small.targets[0].target, cst.Name):
        return None
    value = _code(small.value)
    if "is_available()" in value or "default_device()" in value:
        return small.targets[0].target.value
    return None


class Distribute(cst.CSTTransformer):
    """The rewrites listed in the module docstring, for one file."""

    METADATA_DEPENDENCIES = (QualifiedNameProvider, PositionProvider)

    def __init__(self, device: str, models: set[str], path: str) -> None:
        super().__init__()
        self.device = device
        self.models = models
        self.path = path
        self.notes: list[Finding] = []
        self.sampled_loaders: list[str] = []
        self._rank_guard_depth = 0

    def _note(self, node: cst.CSTNode, message: str) -> None:
        pos = self.get_metadata(PositionProvider, node, None)
        location = Location(self.path, pos.start.line if pos else 0, 0)
        self.notes.append(UndecidableDevicePlacement.finding(message, location))

    def visit_If(self, node: cst.If) -> None:
        if _code(node.test) == RANK_ZERO:
            self._rank_guard_depth += 1

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        if _code(original_node.test) == RANK_ZERO:
            self._rank_guard_depth -= 1
            return updated_node
        test = original_node.test
        is_main = isinstance(test, cst.Comparison) and "__main__" in _code(test)
        if not is_main or not isinstance(updated_node.body, cst.IndentedBlock):
            return updated_node
        init = snippets.statements(INIT.format(device=self.device) + "\n")
        teardown = snippets.statements(snippets.TEARDOWN)
        body = [*init, *updated_node.body.body, *teardown]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if qualified(self, original_node.func) == "torch.nn.DataParallel" and updated_node.args:
            return updated_node.args[0].value  # DDP replaces it
        return updated_node

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        if len(updated_node.body) != 1:
            return updated_node
        small = updated_node.body[0]
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            return self._rank_zero(original_node, updated_node, small.value)
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Name) and isinstance(small.value, cst.Call):
                return self._assignment(original_node, updated_node, target.value, small.value)
        return updated_node

    def _rank_zero(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine, call: cst.Call
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        original_call = original.body[0].value  # type: ignore[attr-defined]
        qname = qualified(self, original_call.func)
        if self._rank_guard_depth or qname not in ("builtins.print", "torch.save"):
            return updated
        guarded = cst.If(
            test=cst.parse_expression(RANK_ZERO),
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=())]),
            leading_lines=updated.leading_lines,
        )
        if qname == "torch.save":
            # Other ranks must not read the checkpoint before rank 0 has written it.
            return cst.FlattenSentinel([guarded, *snippets.statements("dist.barrier()\n")])
        return guarded

    def _assignment(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine, name: str,
        call: cst.Call,
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:  # fmt: skip
        assign = original.body[0]
        assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
        qname = qualified(self, assign.value.func) or ""
        if qname.startswith("torch.") and qname.endswith(".DataLoader"):
            if any(word in name.lower() for word in EVAL_WORDS):
                return updated  # every rank evaluates the whole set: the same numbers as before
            return self._sampled_loader(original, updated, name, call)
        if name in self.models and snippets.final_method(call) == "to":
            wrap = snippets.statements(WRAP.format(name=name, device=self.device) + "\n")
            return cst.FlattenSentinel([updated, *wrap])
        return updated

    def _sampled_loader(
        self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine, name: str,
        call: cst.Call,
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:  # fmt: skip
        args = list(call.args)
        dataset_index = next((i for i, a in enumerate(args) if a.keyword is None), None)
        batch_index = next(
            (i for i, a in enumerate(args) if a.keyword and a.keyword.value == "batch_size"),
            1 if len(args) > 1 and args[1].keyword is None else None,
        )
        if dataset_index is None or batch_index is None or snippets.has_keyword(call, "sampler"):
            self._note(original, f"`{name}`: give the DataLoader a dataset and a batch_size to "
                       "let the port add a DistributedSampler")  # fmt: skip
            return updated
        shuffle = next((a for a in args if a.keyword and a.keyword.value == "shuffle"), None)
        dataset = args[dataset_index].value
        hoisted: list[Statement] = []
        if not isinstance(dataset, (cst.Name, cst.Attribute)):
            hoisted = [snippets.assign(f"{name}_dataset", dataset).with_changes(
                leading_lines=updated.leading_lines)]  # fmt: skip
            dataset = cst.Name(f"{name}_dataset")
            args[dataset_index] = args[dataset_index].with_changes(value=dataset)
        per_rank = cst.parse_expression(
            f"{_code(args[batch_index].value)} // dist.get_world_size()"
        )
        args[batch_index] = args[batch_index].with_changes(value=per_rank)
        shuffle_code = _code(shuffle.value) if shuffle else "False"
        sampler = f"DistributedSampler({_code(dataset)}, shuffle={shuffle_code})"
        args = [a for a in args if a is not shuffle]
        new_call = snippets.add_args(
            call.with_changes(args=args), snippets.keyword("sampler", sampler)
        )
        self.sampled_loaders.append(name)
        assign = updated.body[0].with_changes(value=new_call)
        line = snippets.exploded(updated.with_changes(body=[assign]))
        if hoisted:
            return cst.FlattenSentinel([*hoisted, line.with_changes(leading_lines=())])
        return line

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.For:
        """An epoch loop over a sampled loader tells the sampler its epoch."""
        iterable = original_node.iter
        if not (isinstance(iterable, cst.Call) and _code(iterable.func) == "range"):
            return updated_node
        body_code = _code(original_node.body)
        loaders = [n for n in self.sampled_loaders if n in body_code]
        if not loaders or ".set_epoch(" in body_code:
            return updated_node
        if not isinstance(original_node.target, cst.Name) or original_node.target.value == "_":
            self._note(original_node, "name the epoch loop's variable to let the port call "
                       "`set_epoch` on the DistributedSampler")  # fmt: skip
            return updated_node
        epoch = original_node.target.value
        calls = "".join(f"{n}.sampler.set_epoch({epoch})\n" for n in loaders)
        assert isinstance(updated_node.body, cst.IndentedBlock)
        body = [*snippets.statements(calls), *updated_node.body.body]
        return updated_node.with_changes(body=updated_node.body.with_changes(body=body))


def distribute(source: str, path: str, options: PortOptions) -> tuple[str, list[Finding]]:
    """``source`` as a DDP script for torchrun, and notes; unchanged when it has no device."""
    module = cst.parse_module(source)
    if "init_process_group" in source:
        return source, []
    index, device = next(
        ((i, d) for i, s in enumerate(module.body) if (d := _is_selection(s))), (None, None)
    )
    if index is None or device is None:
        return source, []
    wrapper = cst.MetadataWrapper(module)
    facts = FactsVisitor(set())
    wrapper.visit(facts)
    transformer = Distribute(device, facts.facts.parameter_owners, path)
    ported = wrapper.visit(transformer)
    block = snippets.statements(
        snippets.DISTRIBUTED_SELECTION.format(mark=snippets.MARK, name=device)
    )
    body = list(ported.body)
    blanks = [line for line in body[index].leading_lines if line.comment is None]
    block[0] = block[0].with_changes(leading_lines=[*blanks, *block[0].leading_lines])
    body[index : index + 1] = block
    if not facts.facts.has_main_guard:
        body[index + len(block) : index + len(block)] = snippets.statements(
            INIT.format(device=device) + "\n"
        )
        body.extend(snippets.statements(snippets.TEARDOWN))
    ported = ported.with_changes(body=body)
    needed = [
        "import os",
        "import torch.distributed as dist",
        "from torch.nn.parallel import DistributedDataParallel as DDP",
    ]
    if transformer.sampled_loaders:
        needed.append("from torch.utils.data.distributed import DistributedSampler")
    return ensure_imports(ported, needed).code, transformer.notes
