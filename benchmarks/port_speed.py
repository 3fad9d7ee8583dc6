"""How long ``torchport port`` takes as files grow: it must grow linearly with the file.

Inputs: torch's own ``nn/modules/module.py`` (about 3,000 lines), and that file repeated N times
(its classes renamed so that every name stays unique) up to about 50,000 lines. Each size is
ported in-process (the analysis, the edits and the check of the result, as ``torchport port``
does) ``--repeats`` times; the best time is printed with the time per 1,000 lines, whose
spread across sizes shows whether the cost is linear.

Targets (issue 11): 3,000 lines under 1 s, 50,000 lines under 15 s.

    OMP_NUM_THREADS=1 python benchmarks/port_speed.py [--sizes 1 4 16] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

from torchport.port import PortOptions, port_sources


def module_source() -> str:
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("port_speed: needs an installed torch (its module.py is the input)")
    return (Path(spec.origin).parent / "nn" / "modules" / "module.py").read_text()


def program(copies: int) -> str:
    source = module_source()
    if copies == 1:
        return source
    return "\n".join(source.replace("class ", f"class Copy{i}_") for i in range(copies))


def best_time(source: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        port_sources([("module.py", source)], PortOptions())
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16], metavar="COPIES")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for copies in args.sizes:
        source = program(copies)
        lines = len(source.splitlines())
        seconds = best_time(source, args.repeats if copies < 8 else 1)
        rows.append({"lines": lines, "seconds": round(seconds, 3),
                     "ms_per_1k_lines": round(1000 * seconds / (lines / 1000), 1)})  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'lines':>8}  {'seconds':>8}  {'ms per 1k lines':>15}")
    for row in rows:
        print(f"{row['lines']:>8}  {row['seconds']:>8.2f}  {row['ms_per_1k_lines']:>15.1f}")
    first, last = rows[0], rows[-1]
    growth = last["ms_per_1k_lines"] / first["ms_per_1k_lines"]
    print(f"cost per line grows {growth:.2f}x from {first['lines']} to {last['lines']} lines "
          "(1.00x: linear)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
