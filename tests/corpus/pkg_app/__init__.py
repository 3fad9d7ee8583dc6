"""A small multi-file training package: model, data and the training entry point."""
