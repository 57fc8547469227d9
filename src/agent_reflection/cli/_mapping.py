"""``--map FIELD=COLUMN``: which column of a loader's input holds one of its fields."""

from __future__ import annotations

from pathlib import Path

import click


def parse_maps(pairs: tuple[str, ...], map_file: str | None = None) -> dict[str, str]:
    """``--map FIELD=COLUMN`` pairs (and a ``--map-file`` of FIELD: COLUMN pairs; ``--map``
    wins) as one FIELD -> COLUMN dict; a malformed pair is a usage error."""
    mapping: dict[str, str] = {}
    if map_file:
        import yaml

        loaded = yaml.safe_load(Path(map_file).read_text("utf-8")) or {}
        if not isinstance(loaded, dict):
            raise click.BadParameter(
                "a mapping file holds FIELD: COLUMN pairs", param_hint="--map-file"
            )
        mapping.update({str(k): str(v) for k, v in loaded.items()})
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise click.BadParameter(f"{pair!r}: want FIELD=COLUMN", param_hint="--map")
        mapping[field.strip()] = column.strip()
    return mapping
