"""The version, in its own module so that importing it pulls in nothing else."""

__version__ = "0.1.0"
