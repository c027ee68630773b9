"""`validate`: `jsonschema.validate`, with each schema checked and its validator built once.

`jsonschema.validate` checks the schema against its meta-schema and builds a validator on every
call: about 35 ms, more than validating a report of a few cases takes. The tests that validate
report after report (the matrix, the hostile reports, the problems) call this instead; what is
checked, and the error raised, are the same.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]


@functools.cache
def _validator(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(document: Any, schema: Any) -> None:
    """Raise what `jsonschema.validate(document, schema)` raises (the best-matching error)."""
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = jsonschema.exceptions.best_match(validator.iter_errors(document))
    if error is not None:
        raise error
