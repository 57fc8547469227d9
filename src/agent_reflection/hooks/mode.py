"""``REFLECTION_MODE`` parsing, import-free: the hook's no-op path needs nothing else."""

CAPTURE_MODES = ("solo", "orchestrated")


def parse_mode(raw: str | None) -> tuple[str, str | None]:
    """``REFLECTION_MODE`` → (mode, note). Unset, empty, ``off`` or unknown → ``off``."""
    if raw is None:
        return "off", None
    value = raw.strip().lower()
    if value in CAPTURE_MODES or value in ("", "off"):
        return (value or "off"), None
    return "off", f"REFLECTION_MODE={raw!r} is not off, solo or orchestrated; treated as off"
