"""What ``hookrun predict`` and ``export`` return, and the asset check both export paths share.

Its own module so that :mod:`hookrun.runner.trained.export`, :mod:`~hookrun.runner.trained.predict` and
:mod:`~hookrun.runner.trained.input_fn_run` (the ``serving_input_fn`` export) import it without importing each
other. Importing it does not import TensorFlow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hookrun.common.errors import SetupError


@dataclass
class ExportResult:
    """One export.

    Attributes:
        run_dir: the run directory.
        checkpoint: the checkpoint prefix exported.
        global_step: its ``global_step``.
        output: the SavedModel directory written.
        signatures: signature name -> ``{"inputs": {name: dtype}, "outputs": {name: dtype}}`` (and ``"method"``,
            the SignatureDef's method name, for a ``graph.serving_input_fn`` export).
        seconds: wall time (seconds).
        excluded: signature name -> why it was left out (a ``graph.serving_input_fn`` export: an output that
            cannot take those inputs, as Estimator's export logged it).
    """

    run_dir: str
    checkpoint: str
    global_step: int
    output: str
    signatures: dict[str, dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    excluded: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The result as JSON data."""
        return asdict(self)


def check_assets(session: Any, assets: list[Any]) -> None:
    """Every file in ``ASSET_FILEPATHS`` is a regular file, before anything is written.

    Raises:
        SetupError: one is missing (or a directory): names it and the collection (exit 2).
    """
    for tensor in assets:
        path = Path(session.run(tensor).decode("utf-8", "replace"))
        if not path.is_file():
            raise SetupError(
                f"graph.builder: the model reads the file {path} (a vocabulary or other asset: the graph's "
                "ASSET_FILEPATHS collection), which is not a file now; the export copies it into assets/: "
                "put it back, or export where the path resolves"
            )


@dataclass
class PredictResult:
    """One ``predict`` call.

    Attributes:
        run_dir: the run directory.
        checkpoint: the checkpoint prefix restored.
        global_step: its ``global_step``.
        data: the files read (absolute), in order.
        rows: rows predicted (count; one output row each).
        columns: the output CSV's header.
        output: the CSV written.
        seconds: wall time of reading, predicting and writing (seconds).
    """

    run_dir: str
    checkpoint: str
    global_step: int
    data: list[str]
    rows: int
    columns: list[str] = field(default_factory=list)
    output: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The result as JSON data."""
        return asdict(self)
