"""Static analysis: parse with the stdlib ``ast``, infer what names hold, run rules, apply fixes.

context / scope / infer / kinds   one parsed file; what each name holds (tensor, module...)
hot                               the hot loop and a module's forward (with its helpers)
checks/                           one detector per rule, registered with @detector
engine                            run detectors, honour # noqa, fix until stable
sources / files / runner          notebooks and bad files, discovery + .gitignore, one file
edits / fixer                     text edits from ast positions; atomic writes
"""
