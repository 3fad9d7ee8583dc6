"""dev.py's larger commands, kept out of dev.py so that it stays one screen to read.

Standard library only: ``python3 dev.py`` must start on a bare Python.

- ``wheelhouse``: on a machine with the package index, the wheels a GPU machine needs (not torch);
- ``gpu``: on a GPU machine, every GPU check of torchport, offline, into one report.
"""
