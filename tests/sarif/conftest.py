"""The SARIF 2.1.0 schema, loaded once, as a validator for documents the exporter writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

if str(Path(__file__).parent) not in sys.path:  # sarif_cli, beside this file
    sys.path.insert(0, str(Path(__file__).parent))


def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


@pytest.fixture(scope="session")
def sarif_schema() -> Any:
    return sarif_validator()
