"""Tier 3: a mutation request per recommended skill action, for the agent platform to run.

Written as a ``reflection.mutation_requested`` event and a JSON file; never executed here.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

ALLOWED_TOOLS = ("read_file", "add_skill", "append_memory")
MAX_ROUNDS = 5


@dataclass(frozen=True)
class MutationRequest:
    """A constrained sub-session the platform may spawn: objective, tools, round cap."""

    objective: str
    tool_names: tuple[str, ...] = ALLOWED_TOOLS
    max_rounds: int = MAX_ROUNDS
    system_prompt_mode: str = "none"
    cycle_run_id: int | None = None

    def request_id(self) -> str:
        digest = hashlib.sha1(f"{self.cycle_run_id}:{self.objective}".encode()).hexdigest()
        return digest[:12]

    def to_dict(self) -> dict[str, object]:
        return {
            "request_id": self.request_id(),
            **asdict(self),
            "tool_names": list(self.tool_names),
        }


def write_requests(
    objectives: list[str] | tuple[str, ...], out_dir: Path, cycle_run_id: int | None
) -> list[tuple[MutationRequest, Path]]:
    """One JSON file per objective in ``out_dir`` (``mutation-<run>-<id>.json``)."""
    written: list[tuple[MutationRequest, Path]] = []
    if not objectives:
        return written
    out_dir.mkdir(parents=True, exist_ok=True)
    for objective in objectives:
        request = MutationRequest(objective=objective, cycle_run_id=cycle_run_id)
        path = out_dir / f"mutation-{cycle_run_id}-{request.request_id()}.json"
        path.write_text(json.dumps(request.to_dict(), indent=2) + "\n", "utf-8")
        written.append((request, path))
    return written
