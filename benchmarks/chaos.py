"""make chaos: the job against a misbehaving simulator (tests.support.chaos), N scenarios.

    make chaos      # or: .venv/bin/python benchmarks/chaos.py [--scenarios 10]

Prints scenarios run, faults injected, runs needed and violations; exit 1 on any
non-converged scenario or violation. Writes benchmarks/results/chaos.json.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from tests.support.chaos import FAULTS, run_chaos


def main() -> None:
    """Run the suite and report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=10)
    args = parser.parse_args()
    results = run_chaos(args.scenarios)
    faults: Counter[str] = Counter()
    for r in results:
        faults.update(r.faults)
    bad = [r for r in results if not r.converged or r.violations]
    print(f"chaos: {len(results)} scenarios with faults {FAULTS}")
    print(f"  faults injected: {dict(sorted(faults.items()))}")
    print(f"  runs needed: {Counter(r.runs for r in results)}")
    print(f"  converged: {sum(r.converged for r in results)}/{len(results)}")
    print(f"  violations: {sum(len(r.violations) for r in results)}")
    print(f"  PATCHes sent again by transport retries: {sum(r.retransmitted for r in results)}")
    for r in bad:
        print(f"  seed {r.seed}: converged={r.converged} violations={r.violations[:5]}")
    out = Path(__file__).parent / "results" / "chaos.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps([asdict(r) for r in results], indent=2) + "\n")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
