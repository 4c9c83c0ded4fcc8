"""Shared base for every config model: strict, forbids unknown keys."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Base of all hookrun config models.

    Unknown keys are errors (``extra="forbid"``), values are validated on
    assignment, and fields may be given by name or alias (``class`` for
    ``class_``). Every field carries a ``description``; ``hookrun list-hooks``
    and the JSON Schema are generated from it.

    Models are built (validator, serializer) on first use, not at import
    (``defer_build``): a command builds only the models it touches, and
    validating a ``RunConfig`` builds its nested models as part of it.
    """

    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        populate_by_name=True,
        validate_default=True,
        allow_inf_nan=False,
        defer_build=True,
        strict=True,
    )
