"""The plan file's JSON Schema as shipped: plan.schema.json, beside this module.

The schema is generated from the core's typed model (``retention.core.planfile``);
``python -m retention.runfolder.schema`` writes it again after the model changes, and a
test fails while the shipped file and the model disagree.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from retention.core.planfile import generated_schema

SCHEMA_FILE = "plan.schema.json"


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema of the plan file, as shipped."""
    return shipped_schema("retention.runfolder", SCHEMA_FILE)


def shipped_schema(package: str, name: str) -> dict[str, Any]:
    """A JSON Schema shipped in ``package`` as the file ``name``."""
    schema: dict[str, Any] = json.loads(resources.files(package).joinpath(name).read_text())
    return schema


if __name__ == "__main__":  # pragma: no cover - regenerates the shipped schema
    target = Path(__file__).with_name(SCHEMA_FILE)
    target.write_text(json.dumps(generated_schema(), indent=2) + "\n")
    sys.stdout.write(f"wrote {target}\n")
