"""``python -m torchport``."""

from torchport.cli import main

raise SystemExit(main())
