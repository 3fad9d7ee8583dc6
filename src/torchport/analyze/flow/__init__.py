"""The placement analysis: an abstract interpreter over the program, and what it records.

values    what a value is (kind) and where its tensors were made (origins)
program   the files, functions and classes analysed together; names across files
interp    the interpreter's state and driver; stmts/exprs/calls/methods interpret code
torchapi  the torch/NumPy vocabulary; data: datasets and loaders; pybuiltins: builtins
events    what placement depends on: tensors that meet, host-only uses, module moves...
"""
