"""The risk floor: spec cases F1–F22, table-driven paths for every surface, whole-word
matching (the issue's substring false positives pinned), the table format, real paths."""

from __future__ import annotations

import fnmatch
import itertools
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_reflection.errors import InvalidRiskTable
from agent_reflection.reflection import risk_floor
from agent_reflection.reflection.risk_floor import (
    SHIPPED_TABLE,
    default_risk_table,
    evaluate_risk_floor,
    glob_match,
    load_risk_table,
    parse_risk_table,
    path_tokens,
    read_risk_table,
    wildcard_match,
)

#: F14/F15 pin the design's substring false positives; we match whole path words instead.
SUBSTRING_DIVERGENCE = pytest.mark.xfail(
    strict=True,
    reason="deliberate divergence: the design's patterns are substrings, so 'auth' hits "
    "author.py and 'token' hits tokenizer.py; ours match whole path words (docs/capture.md)",
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
    pytest.param("F14", ["src/author.py"], "auth", 1.0, True, marks=SUBSTRING_DIVERGENCE),
    pytest.param("F15", ["src/tokenizer.py"], "auth", 1.0, True, marks=SUBSTRING_DIVERGENCE),
    ("F16", ["packages/macp/src/schemas/reflection.v1.schema.json"], "data", 0.9, True),
    ("F17", ["src/__tests__/session.test.ts"], "auth", 1.0, True),
    ("F18", ["vite.config.ts"], "build", 0.6, True),
    ("F19", ["SRC/AUTH/X.TS"], "auth", 1.0, True),
]


@pytest.mark.spec
@pytest.mark.parametrize(("case", "files", "surface", "score", "needs_review"), SPEC_CASES)
def test_spec_cases(
    case: str, files: list[str], surface: str, score: float, needs_review: bool
) -> None:
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
    assert evaluate_risk_floor(["src/session.test.ts"]).surface == "auth"
    assert evaluate_risk_floor(["src/nothing.txt"]).surface == "none"


def test_verdict_to_dict_has_exactly_the_schema_fields() -> None:
    assert set(evaluate_risk_floor(["x"]).to_dict()) == {
        "needs_review",
        "score",
        "surface",
        "reason",
    }


# --- the table is data: user TOML overrides ------------------------------------------------


def test_user_table_can_exclude_paths_from_a_surface(tmp_path: Path) -> None:
    table_file = tmp_path / "risk.toml"
    table_file.write_text(
        '[[surface]]\nname = "auth"\nexclude_globs = ["**/lexer/**"]\n'
        'exclude_tokens = ["SessionCookie"]\n'
    )
    table = load_risk_table(table_file)
    assert evaluate_risk_floor(["src/lexer/token.py"], table=table).surface == "none"
    assert evaluate_risk_floor(["src/token.py"], table=table).surface == "auth"
    assert evaluate_risk_floor(["web/session_cookie.py"], table=table).surface == "none"
    assert evaluate_risk_floor(["web/session.py"], table=table).surface == "auth"
    # excluded from auth, it can still fall on a later surface
    assert evaluate_risk_floor(["src/lexer/token.md"], table=table).surface == "docs"
    assert evaluate_risk_floor(["src/auth/jwt.ts"], table=table).surface == "auth"


def test_user_table_can_add_words_and_sequences(tmp_path: Path) -> None:
    table_file = tmp_path / "risk.toml"
    table_file.write_text(
        '[[surface]]\nname = "auth"\ntokens = ["api key", "sessions", "Password"]\n'
    )
    table = load_risk_table(table_file)
    auth = [
        p
        for p in ["src/apiKey.ts", "api_key.py", "requests/sessions.py", "password.go"]
        if evaluate_risk_floor([p], table=table).surface == "auth"
    ]
    assert auth == ["src/apiKey.ts", "api_key.py", "requests/sessions.py", "password.go"]
    # a sequence needs its words in a row, and the list replaced the shipped auth words
    assert evaluate_risk_floor(["api/v2/key.py"], table=table).surface == "none"
    assert evaluate_risk_floor(["src/login.py"], table=table).surface == "none"


def test_user_table_overrides_threshold_and_weights(tmp_path: Path) -> None:
    table_file = tmp_path / "risk.toml"
    table_file.write_text(
        'threshold = 0.3\n[[surface]]\nname = "ui"\nweight = 0.95\nglobs = ["*.vue"]\n'
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
            '[[surface]]\nname = "security"\nweight = 0.5\ntokens = ["x"]\n',
            "'security' is not a reflection.v1 surface",
        ),
        ('[[surface]]\nname = "ui"\nweight = "high"\n', "weight must be a number in [0, 1]"),
        ('[[surface]]\nname = "ui"\nglobs = "*.tsx"\n', "globs must be a list of non-empty"),
        ('[[surface]]\nname = "ui"\ntokens = [""]\n', "tokens must be a list of non-empty"),
        (
            '[[surface]]\nname = "ui"\ntokens = ["*.vue"]\n',
            "surface[0] (ui): tokens: '*.vue' has a wildcard or a path separator",
        ),
        ('[[surface]]\nname = "ui"\ntokens = ["--"]\n', "'--' has no letters or digits"),
        ('[[surface]]\nname = "ui"\nglobs = ["components/"]\n', "no trailing /"),
        ('[[surface]]\nname = "ui"\nglobs = ["a//b"]\n', "no empty parts"),
        ('[[surface]]\nname = "ui"\ncolour = 1\n', "surface[0]: unknown key(s) ['colour']"),
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


def test_plurals_are_matched_only_where_listed() -> None:
    # Whole words: a plural is another word. The shipped table lists the plurals that mean the
    # same thing (entities, migrations, secrets, ...) and not sessions/tokens (docs/capture.md).
    assert evaluate_risk_floor(["src/entities/User.py"]).surface == "data"
    assert evaluate_risk_floor(["prisma/migrations/x/y.prisma"]).surface == "data"
    assert evaluate_risk_floor(["config/secrets.yaml"]).surface == "auth"
    assert evaluate_risk_floor(["theme/tokens.json"]).surface == "none"
    assert evaluate_risk_floor(["requests/sessions.py"]).surface == "none"


def test_the_shipped_table_is_the_documented_toml_template() -> None:
    # data/risk_floor.toml is the one table: the template users copy and what the floor reads.
    import tomllib

    text = Path(SHIPPED_TABLE).read_text("utf-8")
    parsed = parse_risk_table(tomllib.loads(text), source="risk_floor.toml")
    assert parsed == default_risk_table()
    names = [s.name for s in parsed.surfaces]
    assert names == ["auth", "data", "infra", "build", "ui", "test", "docs"]
    assert parsed.threshold == 0.5
    with pytest.raises(InvalidRiskTable, match="threshold is missing"):
        parse_risk_table({}, source="no-base.toml")


@pytest.mark.parametrize(("case", "files", "surface", "score", "needs_review"), SPEC_CASES)
def test_the_cached_table_scores_like_the_parsed_one(
    tmp_path: Path, case: str, files: list[str], surface: str, score: float, needs_review: bool
) -> None:
    # What the Stop hook does: the table it keeps parsed in its state folder.
    first = read_risk_table(cache_dir=str(tmp_path))
    cached = read_risk_table(cache_dir=str(tmp_path))
    assert first == cached == default_risk_table()
    verdict = evaluate_risk_floor(files, table=cached)
    assert verdict == evaluate_risk_floor(files)
    assert (verdict.needs_review, verdict.score, verdict.surface) == (needs_review, score, surface)


def test_the_cache_follows_the_table_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "state"
    table_file = tmp_path / "risk.toml"
    table_file.write_text("threshold = 0.95\n")
    assert read_risk_table(str(table_file), cache_dir=str(cache)).threshold == 0.95
    assert len(list(cache.glob("risk-table-*.json"))) == 1

    def no_parse(path: str, base: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(risk_floor, "_read_toml", no_parse)
    assert read_risk_table(str(table_file), cache_dir=str(cache)).threshold == 0.95
    monkeypatch.undo()
    table_file.write_text("threshold = 0.25\n")  # another size: read afresh
    assert read_risk_table(str(table_file), cache_dir=str(cache)).threshold == 0.25
    for stale in cache.glob("risk-table-*.json"):  # a damaged cache is read past
        stale.write_text("{not json")
    assert read_risk_table(str(table_file), cache_dir=str(cache)).threshold == 0.25
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    assert read_risk_table(cache_dir=str(blocked)) == default_risk_table()  # unwritable: parsed
    with pytest.raises(InvalidRiskTable, match="no such risk table file"):
        read_risk_table(str(tmp_path / "nope.toml"), cache_dir=str(cache))


# --- whole path words, not substrings (the false positives, pinned) -----------------

# (path, surface): each was wrongly matched by a substring of a shorter word before.
NOT_SUBSTRINGS = [
    ("src/invites.py", "none"),  # "vite"
    ("src/tokenizer.py", "none"),  # "token"
    ("src/author.py", "none"),  # "auth"
    ("AUTHORS", "none"),  # "auth"
    ("identity/x.py", "none"),  # "entity"
    ("composer.json", "none"),  # "compose"
    ("packages/vite/README.md", "docs"),  # "vite" (everything under packages/vite/ was build)
    ("packages/vite/src/node/server.ts", "none"),
    ("requests/sessions.py", "none"),  # "session": sessions is another word (see below)
    ("docs/deploying/nginx.rst", "docs"),  # "deploy": docs about deploying are docs
    ("src/seedling.py", "none"),  # "seed"
    ("lib/helmet.js", "none"),  # "helm"
    ("src/secretary.py", "none"),  # "secret"
    ("eslint-plugin-foo/README.md", "build"),  # "eslint" is a whole word here: a real match
]

# (path, surface): what the floor is for, still matched.
STILL_MATCHED = [
    ("vite.config.ts", "build"),
    ("packages/vite/vite.config.mts", "build"),
    ("src/auth/jwt.ts", "auth"),
    ("token.py", "auth"),
    ("src/session.py", "auth"),
    ("src/SessionStore.ts", "auth"),
    ("src/OAuthClient.java", "auth"),
    ("src/oauth2/flow.py", "auth"),
    ("api/authorization.py", "auth"),
    ("docker-compose.yml", "infra"),
    ("Dockerfile.dev", "infra"),
    (".dockerignore", "infra"),
    ("k8s/deployment.yaml", "infra"),
    (".eslintrc.json", "build"),
    ("db/schema.SQL", "data"),
    ("app/models/user_entity.rb", "data"),
]


@pytest.mark.parametrize(("path", "surface"), NOT_SUBSTRINGS + STILL_MATCHED)
def test_whole_words_and_globs(path: str, surface: str) -> None:
    assert evaluate_risk_floor([path]).surface == surface


def test_tokens_and_tokens_py_are_a_decision() -> None:
    # The design's singular words stay (F17 pins session.test.ts as auth); the plurals
    # sessions/tokens are not listed: they mostly name HTTP/ORM sessions and lexer or design
    # tokens (requests/sessions.py is the case). Cost, measured on flask's history:
    # src/flask/sessions.py (signed-cookie sessions) is no longer auth.
    assert evaluate_risk_floor(["session.py"]).surface == "auth"
    assert evaluate_risk_floor(["sessions.py"]).surface == "none"
    assert evaluate_risk_floor(["src/flask/sessions.py"]).surface == "none"
    assert evaluate_risk_floor(["token.py"]).surface == "auth"
    assert evaluate_risk_floor(["tokens.py"]).surface == "none"
    assert evaluate_risk_floor(["src/auth/tokens.py"]).surface == "auth"  # by its folder


@pytest.mark.parametrize(
    ("path", "tokens"),
    [
        ("src/components/LoginForm.tsx", ["src", "components", "login", "form", "tsx"]),
        ("HTTPServer.go", ["http", "server", "go"]),
        ("OAuthClient.java", ["o", "auth", "client", "java"]),
        ("SRC/AUTH/X.TS", ["src", "auth", "x", "ts"]),
        ("infra/k8s/v2Api.yaml", ["infra", "k8s", "v2", "api", "yaml"]),
        ("a\\b_c-d.e f+g", ["a", "b", "c", "d", "e", "f", "g"]),
        ("__tests__/x.test.ts", ["tests", "x", "test", "ts"]),
        ("", []),
        ("...", []),
        ("Überprüfung/Ärger.py", ["überprüfung", "ärger", "py"]),
    ],
)
def test_path_tokens(path: str, tokens: list[str]) -> None:
    assert path_tokens(path) == tokens


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("*.sql", "db/migrations/001.sql", True),
        ("*.sql", "db/sql/readme", False),
        ("vite.config.*", "packages/vite/vite.config.ts", True),
        ("vite.config.*", "packages/vite/README.md", False),
        ("docs", "src/docs/x.py", True),  # no "/": any one component
        ("**/docs/**", "docs/x.rst", True),  # ** is zero folders too
        ("**/docs/**", "mydocs/x.rst", False),
        ("docs/**", "src/docs/x.rst", False),  # with "/": from the root
        ("/makefile", "makefile", True),
        ("/makefile", "sub/makefile", False),
        ("db/migrations/*.sql", "db/migrations/001.sql", True),
        ("db/migrations/*.sql", "db/migrations/old/001.sql", False),
        ("db/**/*.sql", "db/migrations/old/001.sql", True),
        ("**/apps/web/**", "repo/apps/web/src/page.ts", True),
        ("file?.py", "src/file1.py", True),
        ("file?.py", "src/file10.py", False),
        ("*", "anything/at/all", True),
        ("a*b*c", "aXbYbc", True),
        ("a*b*c", "aXbYbd", False),
        ("[ab].py", "[ab].py", True),  # no character sets: "[" is a literal
        ("[ab].py", "a.py", False),
    ],
)
def test_glob_semantics(glob: str, path: str, expected: bool) -> None:
    assert glob_match(glob, path.split("/")) is expected


@given(
    pattern=st.text(alphabet="ab*?.", max_size=8),
    name=st.text(alphabet="ab.", max_size=10),
)
def test_wildcard_match_equals_fnmatchcase(pattern: str, name: str) -> None:
    # On the two wildcards the table's globs have, a component matches as fnmatch says.
    assert wildcard_match(pattern, name) is fnmatch.fnmatchcase(name, pattern)


def test_token_patterns_are_normalised_like_paths(tmp_path: Path) -> None:
    table_file = tmp_path / "risk.toml"
    table_file.write_text(
        '[[surface]]\nname = "build"\ntokens = ["MakeFile", "docker-compose"]\n'
        'globs = ["/Justfile", "CI\\\\*.yml"]\n'
    )
    build = next(s for s in load_risk_table(table_file).surfaces if s.name == "build")
    assert build.tokens == ("make file", "docker compose")
    assert build.globs == ("/justfile", "ci/*.yml")
    table = load_risk_table(table_file)
    assert evaluate_risk_floor(["tools/makeFile.py"], table=table).surface == "build"
    assert evaluate_risk_floor(["Justfile"], table=table).surface == "build"
    sub = evaluate_risk_floor(["sub/Justfile"], table=table)
    assert sub.surface == "none"  # "/..." is the root only


@pytest.mark.parametrize(
    ("text", "old"),
    [
        ('[[surface]]\nname = "ui"\npatterns = [".vue"]\n', "patterns = ['.vue']"),
        ('[[surface]]\nname = "auth"\nexclude = ["author"]\n', "exclude = ['author']"),
    ],
)
def test_substring_tables_are_rejected_with_the_fix(tmp_path: Path, text: str, old: str) -> None:
    table_file = tmp_path / "old.toml"
    table_file.write_text(text)
    with pytest.raises(InvalidRiskTable) as info:
        load_risk_table(table_file)
    message = str(info.value)
    assert message.startswith(f"{table_file}: surface[0] (")  # the file and the entry
    assert old in message  # the values to rewrite
    assert "no longer read" in message
    assert "`tokens`" in message and "`globs`" in message  # the fix


# --- real paths: the flask and sqlite-utils histories ----------------------------------------

# A hand-labelled sample of paths from the two histories, with the surface a reviewer gives
# them; the test checks the sample is real (every path occurs) and the floor agrees.
HISTORY_SAMPLE = {
    "flask": [
        ("AUTHORS", "none"),
        ("docs/deploying/nginx.rst", "docs"),
        ("docs/tutorial/deploy.rst", "infra"),  # order beats file type, as F13
        ("examples/tutorial/flaskr/auth.py", "auth"),
        ("examples/flaskr/templates/login.html", "auth"),
        ("tests/test_session_interface.py", "auth"),
        ("src/flask/sessions.py", "none"),  # the sessions decision's cost
        ("examples/flaskr/schema.sql", "data"),
        ("examples/tutorial/flaskr/static/style.css", "ui"),
        ("src/flask/app.py", "none"),
        ("CHANGES.rst", "none"),
        ("README.md", "docs"),
    ],
    "sqlite-utils": [
        ("sqlite_utils/migrations.py", "data"),
        ("tests/test_migrations.py", "data"),
        ("sqlite_utils/db.py", "none"),
        ("docs/cli.rst", "docs"),
    ],
}


@pytest.mark.shared
@pytest.mark.parametrize("repo", sorted(HISTORY_SAMPLE))
def test_floor_on_paths_from_real_histories(shared_dir: Path, tmp_path: Path, repo: str) -> None:
    clone = tmp_path / repo
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(shared_dir / f"data/git/{repo}.bundle"), str(clone)],
        check=True,
        capture_output=True,
    )
    log = subprocess.run(
        ["git", "log", "--all", "--name-only", "--format="],
        cwd=clone,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    paths = set(log.split("\n")) - {""}
    sample = dict(HISTORY_SAMPLE[repo])
    assert set(sample) <= paths, sorted(set(sample) - paths)
    assert {p: evaluate_risk_floor([p]).surface for p in sample} == sample
    # no substring hit survives anywhere in the history: an auth path has an auth word
    auth_words = set(default_risk_table().surfaces[0].tokens)
    for path in paths:
        if evaluate_risk_floor([path]).surface == "auth":
            assert auth_words & set(path_tokens(path)), path


def test_the_documented_example_table_does_what_the_docs_say(tmp_path: Path) -> None:
    docs = Path(__file__).resolve().parents[1] / "docs" / "capture.md"
    section = docs.read_text("utf-8").split("### Your own table", 1)[1]
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    table_file = tmp_path / "example.toml"
    table_file.write_text(example)
    table = load_risk_table(table_file)
    surfaces = {
        path: evaluate_risk_floor([path], table=table).surface
        for path in [
            "src/lexer/token.py",
            "requests/sessions.py",
            "src/apiKey.ts",
            "src/App.vue",
            "src/login.py",
            "db/schema.sql",
        ]
    }
    assert surfaces == {
        "src/lexer/token.py": "none",
        "requests/sessions.py": "auth",
        "src/apiKey.ts": "auth",
        "src/App.vue": "ui",
        "src/login.py": "auth",
        "db/schema.sql": "data",
    }
