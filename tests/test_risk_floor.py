"""The risk floor: spec cases F1–F22 and table-driven paths for every surface."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from agent_reflection.errors import InvalidRiskTable
from agent_reflection.risk_floor import (
    classify_path,
    default_risk_table,
    evaluate_risk_floor,
    load_risk_table,
)

# (id, files_changed, surface, score, needs_review) from peer-cases/capture-kernel.md
SPEC_CASES = [
    ("F1", [], "none", 0.0, False),
    ("F2", ["src/auth/jwt.ts"], "auth", 1.0, True),
    ("F3", ["prisma/migrations/001_init/migration.sql"], "data", 0.9, True),
    ("F4", ["docker-compose.yml"], "infra", 0.85, True),
    ("F5", [".woodpecker/ci.yml"], "infra", 0.85, True),
    ("F6", ["package.json"], "build", 0.6, True),
    ("F7", ["apps/web/src/page.tsx"], "ui", 0.4, False),
    ("F8", ["src/foo.spec.ts"], "test", 0.2, False),
    ("F9", ["README.md"], "docs", 0.1, False),
    ("F10", ["src/util/math.py"], "none", 0.0, False),
    ("F11", ["README.md", "src/auth/login.ts"], "auth", 1.0, True),
    ("F12", ["src/components/LoginForm.tsx"], "auth", 1.0, True),
    ("F13", ["docs/auth.md"], "auth", 1.0, True),
    ("F14", ["src/author.py"], "auth", 1.0, True),
    ("F15", ["src/tokenizer.py"], "auth", 1.0, True),
    ("F16", ["packages/macp/src/schemas/reflection.v1.schema.json"], "data", 0.9, True),
    ("F17", ["src/__tests__/session.test.ts"], "auth", 1.0, True),
    ("F18", ["vite.config.ts"], "build", 0.6, True),
    ("F19", ["SRC/AUTH/X.TS"], "auth", 1.0, True),
]


@pytest.mark.spec
@pytest.mark.parametrize(("files", "surface", "score", "needs_review"),
                         [c[1:] for c in SPEC_CASES], ids=[c[0] for c in SPEC_CASES])  # fmt: skip
def test_spec_cases(files: list[str], surface: str, score: float, needs_review: bool) -> None:
    verdict = evaluate_risk_floor(files)
    assert (verdict.surface, verdict.score, verdict.needs_review) == (surface, score, needs_review)


@pytest.mark.spec
def test_f11_reason_names_the_file_that_set_the_surface() -> None:
    verdict = evaluate_risk_floor(["README.md", "src/auth/login.ts"])
    assert "src/auth/login.ts" in verdict.reason
    assert "README.md" not in verdict.reason
    assert verdict.reason.startswith("auth surface")


@pytest.mark.spec
def test_f20_order_permutations_give_identical_verdicts() -> None:
    files = ["README.md", "src/auth/login.ts", "src/auth/jwt.ts", "package.json"]
    verdicts = {evaluate_risk_floor(list(p)) for p in itertools.permutations(files)}
    assert len(verdicts) == 1
    (verdict,) = verdicts
    assert verdict.reason.endswith("src/auth/jwt.ts, src/auth/login.ts")


@pytest.mark.spec
def test_f21_high_threshold_lets_data_through() -> None:
    verdict = evaluate_risk_floor(["db/migrations/0002.sql"], threshold=0.95)
    assert (verdict.surface, verdict.needs_review) == ("data", False)
    assert "below the review threshold" in verdict.reason


@pytest.mark.spec
def test_f22_threshold_boundary_is_inclusive() -> None:
    verdict = evaluate_risk_floor(["src/components/Button.tsx"], threshold=0.4)
    assert (verdict.surface, verdict.score, verdict.needs_review) == ("ui", 0.4, True)


@pytest.mark.spec
def test_insertions_and_deletions_are_pinned_as_ignored() -> None:
    files = ["src/components/Button.tsx"]
    base = evaluate_risk_floor(files)
    assert evaluate_risk_floor(files, insertions=5000, deletions=4000) == base
    assert evaluate_risk_floor(files, insertions=0, deletions=0) == base


# Real-looking paths for every surface, to catch a pattern typo or an ordering slip.
SURFACE_PATHS = {
    "auth": [
        "app/middleware/rbac.go",
        "lib/Credentials.java",
        "config/secrets.yaml",
        "api/permissions/views.py",
        "services/login/handler.rs",
        "web/session_store.js",
    ],
    "data": [
        "db/seeds/users.rb",
        "src/user.entity.ts",
        "src/repository/OrderRepository.java",
        "queries/report.SQL",
        "prisma/schema.prisma",
        "alembic/versions/1_migration.py",
    ],
    "infra": [
        "Dockerfile",
        "deploy/prod.sh",
        "charts/helm/values.yaml",
        "infra/k8s/svc.yaml",
        "terraform/main.tf",
        "traefik/dynamic.yml",
        "compose.override.yml",
    ],
    "build": [
        "tsconfig.base.json",
        "turbo.json",
        "pnpm-lock.yaml",
        "eslint.config.mjs",
        "packages/ui/package.json",
        "jest.config.js",
    ],
    "ui": ["src/App.tsx", "styles/main.css", "src/components/Nav.vue", "apps/web/index.html"],
    "test": ["src/math.test.ts", "lib/parser.spec.js", "src/__tests__/util.js"],
    "docs": ["CHANGELOG.md", "docs/index.rst", "guide/intro.MD"],
    "none": ["src/util/math.py", "Makefile", "main.go", "LICENSE", "src/lib.rs"],
}


@pytest.mark.parametrize(
    ("surface", "path"),
    [(s, p) for s, paths in SURFACE_PATHS.items() for p in paths],
)
def test_each_surface_on_real_looking_paths(surface: str, path: str) -> None:
    assert evaluate_risk_floor([path]).surface == surface


def test_windows_separators_are_normalised() -> None:
    assert evaluate_risk_floor(["src\\components\\Nav.vue"]).surface == "ui"


def test_highest_weight_wins_across_files_and_ties_list_all_files() -> None:
    verdict = evaluate_risk_floor(["b/Dockerfile", "a/deploy.sh", "README.md", "app.tsx"])
    assert (verdict.surface, verdict.score) == ("infra", 0.85)
    assert verdict.reason.endswith("a/deploy.sh, b/Dockerfile")


def test_reason_bounds_the_file_list() -> None:
    files = [f"src/auth/f{i:02d}.py" for i in range(12)]
    verdict = evaluate_risk_floor(files)
    assert "and 7 more" in verdict.reason
    assert "f05" not in verdict.reason


def test_empty_change_never_needs_review_even_at_threshold_zero() -> None:
    verdict = evaluate_risk_floor([], threshold=0.0)
    assert (verdict.surface, verdict.score, verdict.needs_review) == ("none", 0.0, False)
    assert evaluate_risk_floor(["Makefile"], threshold=0.0).needs_review is False


def test_per_file_first_match_in_weight_order() -> None:
    # "session" (auth) beats ".test." (test) within one file: F17's rule.
    assert classify_path("src/session.test.ts").name == "auth"  # type: ignore[union-attr]
    assert classify_path("src/nothing.txt") is None


def test_verdict_to_dict_has_exactly_the_schema_fields() -> None:
    assert set(evaluate_risk_floor(["x"]).to_dict()) == {
        "needs_review", "score", "surface", "reason"}  # fmt: skip


# --- the table is data: user TOML overrides ------------------------------------------------


def test_user_table_can_exclude_a_known_false_positive(tmp_path: Path) -> None:
    table_file = tmp_path / "risk.toml"
    table_file.write_text('[[surface]]\nname = "auth"\nexclude = ["author", "tokenizer"]\n')
    table = load_risk_table(table_file)
    assert evaluate_risk_floor(["src/author.py"], table=table).surface == "none"
    assert evaluate_risk_floor(["src/tokenizer.py"], table=table).surface == "none"
    assert evaluate_risk_floor(["src/auth/jwt.ts"], table=table).surface == "auth"


def test_user_table_overrides_threshold_and_weights(tmp_path: Path) -> None:
    table_file = tmp_path / "risk.toml"
    table_file.write_text(
        'threshold = 0.3\n[[surface]]\nname = "ui"\nweight = 0.95\npatterns = [".vue"]\n'
    )
    table = load_risk_table(table_file)
    assert table.threshold == 0.3
    # ui now outranks data; its patterns were replaced, so .tsx no longer matches ui
    verdict = evaluate_risk_floor(["a.vue", "db/seed.rb"], table=table)
    assert (verdict.surface, verdict.score, verdict.needs_review) == ("ui", 0.95, True)
    assert evaluate_risk_floor(["src/App.tsx"], table=table).surface == "none"
    assert evaluate_risk_floor(["src/foo.test.ts"], table=table).needs_review is False
    assert evaluate_risk_floor(["README.md"], table=table, threshold=0.05).needs_review


def test_shipped_table_is_in_descending_weight_order() -> None:
    weights = [s.weight for s in default_risk_table().surfaces]
    assert weights == sorted(weights, reverse=True)
    assert default_risk_table().threshold == 0.5


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("threshold = 2\n", "threshold must be a number in [0, 1]"),
        ("color = 1\n", "unknown key(s) ['color']"),
        (
            '[[surface]]\nname = "security"\nweight = 0.5\npatterns = ["x"]\n',
            "'security' is not a reflection.v1 surface",
        ),
        ('[[surface]]\nname = "ui"\nweight = "high"\n', "weight must be a number in [0, 1]"),
        ('[[surface]]\nname = "ui"\npatterns = "tsx"\n', "patterns must be a list of non-empty"),
        ("threshold = \n", "not a readable TOML file"),
    ],
)
def test_bad_tables_raise_a_message_naming_file_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    table_file = tmp_path / "bad.toml"
    table_file.write_text(text)
    with pytest.raises(InvalidRiskTable) as info:
        load_risk_table(table_file)
    assert message in str(info.value)
    assert str(table_file) in str(info.value)


def test_missing_table_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidRiskTable, match="no such risk table file"):
        load_risk_table(tmp_path / "nope.toml")


def test_threshold_argument_is_checked() -> None:
    with pytest.raises(InvalidRiskTable):
        evaluate_risk_floor(["x"], threshold=1.5)


def test_known_false_negative_plural_is_not_the_pattern() -> None:
    # Literal substrings: "entity" is not in "entities". Documented; add a pattern to cover it.
    assert evaluate_risk_floor(["src/entities/User.py"]).surface == "none"


def test_shipped_constant_is_exactly_the_documented_toml_template() -> None:
    # The hook scores with the constant (no tomllib per stop); data/risk_floor.toml is the
    # template users copy. They must be one table.
    import tomllib

    import agent_reflection
    from agent_reflection import _risk_core
    from agent_reflection.risk_floor import parse_risk_table

    text = (Path(agent_reflection.__file__).parent / "data" / "risk_floor.toml").read_text()
    parsed = parse_risk_table(tomllib.loads(text), source="risk_floor.toml")
    assert parsed == default_risk_table()
    assert parsed.rows() == _risk_core.SHIPPED_SURFACES
    assert parsed.threshold == _risk_core.SHIPPED_THRESHOLD


@pytest.mark.parametrize(("case", "files", "surface", "score", "needs_review"), SPEC_CASES)
def test_core_and_typed_face_agree(
    case: str, files: list[str], surface: str, score: float, needs_review: bool
) -> None:
    from agent_reflection._risk_core import SHIPPED_SURFACES, SHIPPED_THRESHOLD, score_files

    verdict = evaluate_risk_floor(files)
    core = score_files(files, SHIPPED_SURFACES, SHIPPED_THRESHOLD)
    assert core == (verdict.needs_review, verdict.score, verdict.surface, verdict.reason)
    assert core[:3] == (needs_review, score, surface)
