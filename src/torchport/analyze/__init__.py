"""Static analysis: parse with the stdlib ``ast``, infer what names hold, run rules, apply fixes."""
