"""docs/architecture.md stays true: every package is in its table, each package imports only
what its row says, every path it names exists, and each of the two common changes touches at
most four source files."""

from __future__ import annotations

import re

import pytest

from conftest import REPO_ROOT
from test_import_cycles import PACKAGE, import_graph

DOC = REPO_ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| `(?P<name>[a-z_]+)` \| (?P<what>.+) \| (?P<imports>.+) \|$")


def section(title: str) -> str:
    text = DOC.read_text("utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : None if end < 0 else end]


def documented_imports() -> dict[str, set[str]]:
    """Each table row's package and the packages its last column names, in table order."""
    rows: dict[str, set[str]] = {}
    for line in section("Packages").splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        imports = match["imports"]
        # "everything above": the rows before it
        names = (
            set(rows) if imports == "everything above" else set(re.findall(r"`([a-z_]+)`", imports))
        )
        rows[match["name"]] = names
    return rows


def package_of(module: str) -> str | None:
    """``agent_reflection.load.git.szz`` -> ``load``; the root package itself -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None


def test_every_package_and_top_level_module_has_a_row() -> None:
    present = {
        p.name if p.is_dir() else p.stem
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists())
        or (p.suffix == ".py" and p.stem not in {"__init__", "__main__"})
    }
    assert set(documented_imports()) == present


def test_each_package_imports_only_what_its_row_names() -> None:
    documented = documented_imports()
    actual: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        source = package_of(module)
        if source is None:
            continue
        for target in targets:
            to = package_of(target)
            if to is not None and to != source:
                actual.setdefault(source, set()).add(to)
    undocumented = {
        package: sorted(targets - documented.get(package, set()))
        for package, targets in actual.items()
        if targets - documented.get(package, set())
    }
    assert not undocumented, (
        f"imports docs/architecture.md does not name: {undocumented}; add them to the package's "
        "row (and ask whether the import goes the right way)"
    )


def test_every_path_the_page_names_exists() -> None:
    text = DOC.read_text("utf-8")
    paths = set(re.findall(r"`((?:src|tests|docs)/[^`\s]+)`", text))
    assert paths, "the page names no paths"
    missing = sorted(p for p in paths if not (REPO_ROOT / p).exists())
    assert not missing


@pytest.mark.parametrize(
    "title", ["Adding a field to reflection.v1", "Adding a P2 bucket condition"]
)
def test_a_common_change_touches_at_most_four_source_files(title: str) -> None:
    steps = re.findall(r"^\d+\. `([^`]+)`", section(title), flags=re.MULTILINE)
    assert 1 <= len(steps) <= 4, steps
    assert all((REPO_ROOT / path).is_file() for path in steps), steps
