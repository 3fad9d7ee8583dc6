"""``torchport doctor``: why the GPU is not used or not usable, and the exact fix.

Probes run in a subprocess with a timeout (:mod:`torchport.doctor.probes`); the diagnosis is a set
of pure rules over the probe dict (:mod:`torchport.doctor.diagnose`), testable with fake probes.
This package must stay cheap to import: the probe subprocess imports it before anything else.
"""
