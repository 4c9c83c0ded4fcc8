"""Config of the input data: CSV files fed through ``tf.data``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveInt, field_validator

from hookrun.config_schemas.base import StrictModel


class DataConfig(StrictModel):
    """CSV input: which file, which columns, how it is batched.

    Paths are relative to the config file's directory. Every feature column
    must be numeric; rows become ``float32`` tensors ``features: [batch,
    n_features]`` and ``labels: [batch, 1]``.
    """

    train: str = Field(description="Training CSV file, relative to the config file.")
    label: str = Field(description="Name of the label column.")
    features: list[str] | None = Field(
        default=None, description="Feature columns, in order; default: every column but the label."
    )
    batch_size: PositiveInt = Field(default=32, description="Rows per step (rows).")
    epochs: PositiveInt | None = Field(
        default=1, description="Passes over the data (count); null repeats forever."
    )
    shuffle: bool = Field(default=True, description="Shuffle the rows each epoch (buffer: the whole file).")
    seed: int | None = Field(default=0, description="Seed for shuffling and weight initialisation.")
    missing: Literal["error", "drop"] = Field(
        default="error",
        description="A row with an empty cell: `error` (names file and line) or `drop` the row.",
    )
    standardize: bool = Field(
        default=True,
        description="Scale each feature to zero mean and unit variance, with statistics from the training data.",
    )

    @field_validator("features")
    @classmethod
    def _unique_features(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not value:
                raise ValueError("list at least one feature, or leave `features` out to use every column")
            seen: set[str] = set()
            for name in value:
                if name in seen:
                    raise ValueError(f"feature {name!r} is listed twice")
                seen.add(name)
        return value
