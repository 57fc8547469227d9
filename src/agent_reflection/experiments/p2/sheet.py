"""Gate labels for a team's own P2 signals: a blind, stratified reading sheet.

P2's rules put each counted signal in a gate bucket; gate labels on a sample of the signals
correct them (the second rater's columns, ``tests/data/p2_second_rater/``). ``reflect p2
sheet`` draws that sample and writes what a rater needs:

- ``labels.csv``: :data:`SHEET_COLUMNS`, the known ones filled (repo, sha, kind, subject, P2's
  introducing commit), the judged ones blank;
- ``sheet.md``: per signal, the fixing commit (header, stat, the diff of its code files) and
  P2's introducing commit (subject, stat, its diff on the fix's code files, the blamed-line
  count), after the labelling criteria read from the label folders' READMEs;
- ``README.md``: how the sample was drawn (seed, per-bucket counts, database, date).

**Stratified** by P2's bucket: :func:`draw_sample` takes ``per_bucket`` signals of each bucket
(all of a smaller one), so every row of the correction matrix (P2's bucket -> the labelled
gate) gets labels. **Blind**: P2's bucket and rule reach none of the files, and the rows are in
one seeded shuffled order, so their position does not reveal the bucket either.

Pure: :func:`draw_sample`, :func:`truncate_diff`, :func:`criteria_markdown` and the
``render_*`` functions. I/O edges: :func:`counted_signals` (the database),
:func:`repo_source` and :func:`read_commit` (git), :func:`read_criteria`,
:func:`labelled_shas` (earlier label files); :func:`make_sheet` (``reflect p2 sheet``: all of
it, into a folder) and :func:`check_labels` (``reflect p2 check-labels``).
"""

from __future__ import annotations

import csv
import io
import os
import re
import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.p2.gates import ADJUDICATED, NOT_A_FAILURE, read_own_labels
from agent_reflection.experiments.p2.paths import matches
from agent_reflection.experiments.p2.precision import csv_rows, fixing_sha, label_files
from agent_reflection.experiments.p2.raters import GATES, cohens_kappa, read_gate_labels
from agent_reflection.experiments.p2.sample import Draw, SheetSignal, draw_sample

__all__ = ["Draw", "SheetSignal", "draw_sample"]  # their home is .sample; the sheet's API
from agent_reflection.experiments.registration import (
    Preregistration,
    load_preregistration,
    registered_preregistration_path,
)
from agent_reflection.load.git.repo import GitLoadError, GitSource, git, open_repo, said
from agent_reflection.names import by_text
from agent_reflection.store.db import connect, read_sql

#: The second rater's columns, in their order (``tests/data/p2_second_rater/*.csv``).
SHEET_COLUMNS = (
    "repo",
    "fixing_sha",
    "kind",
    "subject",
    "is_failure",
    "category",
    "p2_introducing_sha",
    "introducing_ok",
    "introducing_shas",
    "gate_label",
    "knowable",
    "rationale",
)
#: Where the criteria are written (relative to the registered pre-registration's folder), and
#: the section of each that the sheet copies.
CRITERIA_SOURCES = (
    ("tests/data/p2_validation/README.md", "Judging"),
    ("tests/data/p2_second_rater/README.md", "Columns"),
)
#: Default lines of diff shown per commit; the rest is named with the command that shows it.
MAX_DIFF_LINES = 200
#: The first characters that make a spreadsheet read a cell as a formula (CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class SheetError(ReflectionError, ValueError):
    """The sheet cannot be made: a repository, a commit or an input file is missing."""


@dataclass(frozen=True)
class CommitView:
    """What the sheet shows of one commit."""

    sha: str
    # ``git show -s --format=fuller``: author, dates, the whole message
    header: str
    stat: str
    # the diff shown (of ``paths``), perhaps cut; ``notes`` says what is left out
    diff: str
    paths: tuple[str, ...]
    notes: tuple[str, ...]


# --- pure -------------------------------------------------------------------------------------


def truncate_diff(diff: str, max_lines: int) -> tuple[str, tuple[str, ...]]:
    """At most ``max_lines`` lines of ``diff``, whole files first: files are taken in order
    while they fit; one that does not is cut to what is left when that is at least 10 lines,
    else left out. Returns the text and one note per file cut or left out."""
    files: list[tuple[str, list[str]]] = []  # (path, lines) per file of the patch
    for line in diff.splitlines():
        if line.startswith("diff --git ") or not files:
            match = re.match(r"diff --git a/(.*) b/(.*)$", line)
            files.append((match.group(2) if match else "?", []))
        files[-1][1].append(line)
    kept: list[str] = []
    notes: list[str] = []
    left = max_lines
    for path, lines in files:
        if len(lines) <= left:
            kept.extend(lines)
            left -= len(lines)
        elif left >= 10:
            kept.extend(lines[:left])
            notes.append(f"{path}: diff cut after {left} of {len(lines)} lines")
            left = 0
        else:
            notes.append(f"{path}: diff of {len(lines)} lines not shown")
    return "\n".join(kept), tuple(notes)


def section(markdown: str, heading: str) -> str:
    """The body of the ``## heading`` section of a Markdown text ('' when there is none)."""
    lines = markdown.splitlines()
    out: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            if inside:
                break
            inside = line[3:].strip() == heading
            continue
        if inside:
            out.append(line)
    return "\n".join(out).strip()


def criteria_markdown(sources: Sequence[tuple[str, str, str]]) -> str:
    """The labelling criteria, from (file name, heading, file text) triples: each file's
    section under that heading. The validation README's "Judging" section ends with how its
    own rater worked, so a section is kept up to the end of its first table when it has one
    that is followed by more prose (the criteria), whole otherwise."""
    parts: list[str] = []
    for name, heading, text in sources:
        body = section(text, heading)
        if not body:
            raise SheetError(f"{name}: no '## {heading}' section to copy the criteria from")
        if heading == "Judging":
            blocks = body.split("\n\n")
            tables = [i for i, block in enumerate(blocks) if block.lstrip().startswith("|")]
            if tables:
                body = "\n\n".join(blocks[: tables[0] + 1])
        parts.append(f"### {heading} (from `{name}`)\n\n{body}")
    return "\n\n".join(parts)


def safe_cell(value: str) -> str:
    """``value`` as a spreadsheet shows it and never runs it: a cell that starts like a formula
    (:data:`FORMULA_STARTS`; a commit subject "=HYPERLINK(...)" or "-x") gets a leading
    apostrophe, which spreadsheets read as "text" and do not show."""
    return f"'{value}" if value.startswith(FORMULA_STARTS) else value


def render_labels_csv(draw: Draw) -> str:
    """``labels.csv``: one row per drawn signal in the sheet's order; the rater's columns
    blank."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SHEET_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for s in draw.signals:
        row = {
            "repo": s.repo,
            "fixing_sha": s.fixing_sha,
            "kind": s.kind,
            "subject": s.subject,
            "p2_introducing_sha": s.introducing_sha or "",
        }
        writer.writerow({k: safe_cell(v) for k, v in row.items()})
    return out.getvalue()


def fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block whose fence is longer than any backtick run in it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{info}\n{text.rstrip()}\n{bar}"


def render_signal(
    number: int,
    total: int,
    signal: SheetSignal,
    fixing: CommitView,
    introducing: CommitView | None,
) -> str:
    """One signal's section of ``sheet.md`` (``number``: its row in labels.csv, from 1)."""
    lines = [
        f"## {number} of {total}: {signal.repo} `{signal.fixing_sha[:10]}` ({signal.kind})",
        "",
        f"labels.csv line {number + 1}; fixing commit `{signal.fixing_sha}`",
        "",
        "### The fixing commit",
        "",
        fence(fixing.header, "text"),
        "",
        fence(fixing.stat or "(no files)", "text"),
        "",
        *_diff_block(fixing, "its code files"),
    ]
    lines += ["", "### P2's introducing commit", ""]
    if introducing is None or signal.introducing_sha is None:
        lines.append("P2 names no introducing commit for this signal.")
        return "\n".join(lines)
    what = "the commit it reverts" if signal.kind == "revert" else "SZZ's candidate"
    # the subject line of a --format=fuller header: its first indented line
    subject = next(
        (
            line.strip()
            for line in introducing.header.splitlines()
            if line.startswith("    ") and line.strip()
        ),
        "(no subject)",
    )
    gap = (
        ""
        if signal.gap_days is None
        else f", committed {signal.gap_days:.1f} day(s) before the fix"
    )
    blamed = (
        "not measured (a revert names its target; no blame)"
        if signal.blamed_lines is None
        else f"{signal.blamed_lines} of the lines the fix deletes or changes were last "
        "written by this commit (git blame on the fix's parent)"
    )
    lines += [
        f"`{signal.introducing_sha}` ({what}{gap}): {subject}",
        "",
        f"Blamed lines: {blamed}.",
        "",
        fence(introducing.stat or "(no files)", "text"),
        "",
        *_diff_block(introducing, "the fix's code files"),
    ]
    return "\n".join(lines)


def _diff_block(view: CommitView, which: str) -> list[str]:
    if not view.paths:
        lines = [f"No diff of {which}."]
    else:
        lines = [f"Diff of {which} ({', '.join(view.paths)}):", "", fence(view.diff, "diff")]
    if view.notes:
        lines += ["", "Not shown: " + "; ".join(view.notes) + "."]
    return lines


def render_sheet(
    draw: Draw,
    views: Mapping[str, tuple[CommitView, CommitView | None]],
    criteria: str,
) -> str:
    """``sheet.md``: how to label, the criteria, then each signal (``views``: the fixing and
    introducing commit of each fixing sha)."""
    total = len(draw.signals)
    head = [
        "# P2 gate labels: reading sheet",
        "",
        f"{total} signal(s) of P2, one section each, in the order of `labels.csv`. For each,"
        " read the commits below (look further with `git log -S`, `git grep`, `git show"
        " <commit>:<file>` where they do not settle it) and fill that row's `is_failure`,"
        " `category`, `introducing_ok`, `introducing_shas`, `gate_label` (failures only) and a"
        " one-line `rationale`. Then check the file: `reflect p2 check-labels labels.csv`.",
        "",
        "## How to label",
        "",
        criteria,
    ]
    body = [
        render_signal(i, total, s, *views[s.fixing_sha])
        for i, s in enumerate(draw.signals, start=1)
    ]
    return "\n".join(head) + "\n\n---\n\n" + "\n\n---\n\n".join(body) + "\n"


def render_readme(
    draw: Draw,
    *,
    db: str,
    created: str,
    prereg: Preregistration,
    excluded_from: Sequence[str],
    command: str,
) -> str:
    """``README.md``: how the sample was drawn, so the filled labels can be registered."""
    per = ", ".join(
        f"{b} {draw.drawn[b]} of {draw.available[b]}" for b in draw.drawn if draw.available
    )
    empty = [b for b, n in draw.drawn.items() if n == 0]
    lines = [
        "# P2 gate labels",
        "",
        f"Drawn by `reflect p2 sheet` on {created} from `{db}`"
        f"{'' if draw.repo is None else f' (repository {draw.repo})'}: seed {draw.seed}, "
        f"{draw.per_bucket} counted signals per P2 bucket (all of a bucket with fewer), "
        f"{len(draw.signals)} in all; drawn of those not yet labelled: {per}.",
        "",
        f"- Pre-registration: `{prereg.path}` (sha256 {prereg.sha256[:12]}).",
        f"- Skipped as already labelled: {draw.excluded} signal(s)"
        + (f", in {', '.join(f'`{p}`' for p in excluded_from)}." if excluded_from else "."),
        f"- Command: `{command}`",
        "",
        "Stratified so that each bucket's row of the correction matrix gets labels; the rows are"
        " shuffled and `sheet.md` does not show P2's bucket or rule, so the rating is blind to"
        " them. Fill `labels.csv` from `sheet.md`, check it with `reflect p2 check-labels"
        " labels.csv`, then list its path in the pre-registration's `[p2] gate_labels_paths`.",
    ]
    if empty:
        lines += ["", f"No signal was drawn for: {', '.join(empty)} (none left to draw)."]
    return "\n".join(lines) + "\n"


# --- I/O edges --------------------------------------------------------------------------------


def counted_signals(con: duckdb.DuckDBPyConnection, prereg: Preregistration) -> list[SheetSignal]:
    """P2's counted signals on the database: its own signal derivation and bucket rules
    (:func:`~agent_reflection.experiments.p2.analysis.analyse_p2`, without labels)."""
    from agent_reflection.experiments.p2.analysis import analyse_p2
    from agent_reflection.experiments.p2.inputs import load_ci_results, load_history

    history = load_history(con, prereg.p2)
    repos = sorted({c.repo for c in history.commits.values()})
    result = analyse_p2(history, (), prereg, repos=repos, ci=load_ci_results(con, prereg.p2))
    return [SheetSignal.of(s) for s in result.details["signals"] if s["bucket"] is not None]


def labelled_shas(paths: Iterable[Path]) -> frozenset[str]:
    """The fixing shas of label files (CSV files, or folders of ``*.csv``): any file with a
    ``fixing_sha`` column, filled or not (a drawn row is not drawn again)."""
    return frozenset(
        fixing_sha(row, where)
        for path in label_files(Path.cwd(), [str(p) for p in paths])
        for where, row in csv_rows(path, ("fixing_sha",))
    )


def repo_source(
    con: duckdb.DuckDBPyConnection, repo: str, override: str | None = None
) -> GitSource:
    """The repository ``reflect load git`` read for ``repo`` (``override``: a path given
    instead): the latest load's path that still exists, or its bundle's clone."""
    try:
        if override is not None:
            return open_repo(override, name=repo)
        rows = con.execute(read_sql("experiments/p2_sheet_repo_paths.sql"), {"repo": repo})
        tried: list[str] = []
        for _load_id, origin, bundle_clone in rows.fetchall():
            if bundle_clone and (Path(bundle_clone) / "HEAD").is_file():
                return GitSource(Path(bundle_clone), repo, str(origin), bundle=Path(origin))
            if Path(origin).exists():
                return open_repo(origin, name=repo)
            tried.append(str(origin))
    except GitLoadError as exc:
        raise SheetError(f"repository {repo!r}: {exc}") from None
    where = (
        f"it was loaded from {', '.join(tried)}, which is not there any more"
        if tried
        else "the database records no `reflect load git` of it"
    )
    raise SheetError(
        f"repository {repo!r}: {where}; pass --repo-path {repo}=PATH (a clone or bundle of it)"
    )


def check_commits(source: GitSource, shas: Iterable[str]) -> None:
    """Every sha is a commit of ``source``, or a :class:`SheetError` naming the repository."""
    wanted = sorted(set(shas))
    done = git(source.path, "cat-file", "--batch-check", input="\n".join(wanted).encode() + b"\n")
    if done.returncode != 0:
        raise SheetError(f"repository {source.name!r} at {source.path}: {said(done.stderr)}")
    found = {line.split()[0] for line in done.stdout.decode().splitlines() if " commit " in line}
    missing = [sha for sha in wanted if sha not in found]
    if missing:
        raise SheetError(
            f"repository {source.name!r} at {source.path} lacks {len(missing)} of the drawn "
            f"signals' commits ({', '.join(sha[:12] for sha in missing[:3])}"
            f"{', ...' if len(missing) > 3 else ''}): pass --repo-path {source.name}=PATH, "
            "the repository that was loaded"
        )


def read_commit(
    source: GitSource,
    sha: str,
    *,
    non_code_paths: Sequence[str],
    on_paths: Sequence[str] | None = None,
    max_lines: int = MAX_DIFF_LINES,
) -> CommitView:
    """One commit by real ``git show`` (a merge against its first parent): its header, stat
    and the diff of its code files, or, with ``on_paths``, its diff on those paths."""
    first = "--diff-merges=first-parent"
    header = _git_text(source, "show", "-s", "--format=fuller", "--date=iso", sha)
    stat = _git_text(source, "show", "--format=", first, "--stat=100,70", sha)
    listed = _git_bytes(source, "show", "--format=", first, "--name-only", "-z", sha)
    # each name's text (as loaded and shown), and its own bytes for git's arguments
    as_git = by_text([n.strip("\n") for n in os.fsdecode(listed).split("\0") if n.strip("\n")])
    names = list(as_git)
    notes: list[str] = []
    if on_paths is None:
        paths = [n for n in names if n and not matches(n, non_code_paths)]
        other = [n for n in names if n and matches(n, non_code_paths)]
        if other:
            notes.append(f"the diff of {', '.join(other)} (not code)")
    else:
        paths = [p for p in on_paths if p in names]
        if not paths:
            notes.append("it changes none of the fix's code files (under their present names)")
    diff = ""
    if paths:
        patch = _git_text(
            source,
            "--literal-pathspecs",  # a path is a name, never pathspec magic
            "show",
            "--format=",
            first,
            "--patch",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            sha,
            "--",
            *(as_git[p] for p in paths),
        )
        diff, cut = truncate_diff(patch, max_lines)
        notes.extend(cut)
        if cut:
            notes.append(f"the whole diff: `git show {sha[:12]} -- {' '.join(paths)}`")
    return CommitView(sha, header.rstrip(), stat.rstrip(), diff, tuple(paths), tuple(notes))


def _git_text(source: GitSource, *args: str) -> str:
    return _git_bytes(source, *args).decode("utf-8", "replace")


def _git_bytes(source: GitSource, *args: str) -> bytes:
    # non-ASCII names as they are, not as octal escapes
    done = git(source.path, "-c", "core.quotePath=false", *args)
    if done.returncode != 0:
        raise SheetError(
            f"repository {source.name!r} at {source.path}: git {' '.join(args[:2])} failed "
            f"({said(done.stderr)})"
        )
    return done.stdout


def read_criteria(base: Path | None = None) -> str:
    """The criteria (:data:`CRITERIA_SOURCES`) from the label folders' READMEs under ``base``
    (default: the registered pre-registration's folder: the checkout, or the installed
    package's data, which ships them)."""
    root = base if base is not None else registered_preregistration_path().parent
    sources: list[tuple[str, str, str]] = []
    for name, heading in CRITERIA_SOURCES:
        path = root / name
        try:
            sources.append((name, heading, path.read_text(encoding="utf-8")))
        except OSError as exc:
            raise SheetError(f"{path}: cannot read the labelling criteria ({exc})") from None
    return criteria_markdown(sources)


@dataclass(frozen=True)
class Sheet:
    """What :func:`make_sheet` wrote."""

    folder: Path
    draw: Draw
    files: tuple[Path, ...]


def make_sheet(
    db: Path,
    out: str | Path,
    *,
    per_bucket: int | None = None,
    seed: int | None = None,
    repo: str | None = None,
    exclude_paths: Sequence[str | Path] = (),
    include_registered: bool = False,
    repo_paths: Mapping[str, str] | None = None,
    max_lines: int = MAX_DIFF_LINES,
    force: bool = False,
    preregistration_path: str | Path | None = None,
) -> Sheet:
    """``reflect p2 sheet``: draw the sample and write ``labels.csv``, ``sheet.md`` and
    ``README.md`` into ``out``. P2's rules come from the pre-registration (its ``[p2]
    gate_sample_per_bucket`` and ``gate_sample_seed`` unless ``per_bucket`` / ``seed`` are
    given), the signals from the database ``db``. Signals already labelled in
    ``exclude_paths``, and unless ``include_registered`` in the files of ``[p2]
    gate_labels_paths``, are not drawn. An existing ``labels.csv`` (perhaps filled) is kept
    unless ``force``. The sheet's README records the command that draws the same sample
    again."""
    prereg = load_preregistration(
        Path(preregistration_path).resolve() if preregistration_path else None
    )
    per_bucket = per_bucket or prereg.p2.gate_sample_per_bucket
    seed = prereg.p2.gate_sample_seed if seed is None else seed
    if not db.is_file():
        raise SheetError(f"{db}: no such database (load one with `reflect load git`)")
    command = [
        *("reflect", "p2", "sheet", "--db", str(db), "--out", str(out)),
        *("--per-bucket", str(per_bucket), "--seed", str(seed)),
        *(["--repo", repo] if repo else []),
        *(arg for path in exclude_paths for arg in ("--exclude-labelled", str(path))),
        *(["--include-registered"] if include_registered else []),
    ]
    registered = (
        []
        if include_registered
        else label_files(Path(prereg.path).parent, prereg.p2.gate_labels_paths)
    )
    excluded = [*(Path(p) for p in exclude_paths), *registered]
    out = Path(out)
    labels = out / "labels.csv"
    if labels.exists() and not force:
        raise SheetError(
            f"{labels} exists (its labels may be filled in): choose another --out, or --force"
        )
    with connect(db, read_only=True) as con:
        signals = counted_signals(con, prereg)
        repos = sorted({s.repo for s in signals})
        if repo is not None and repo not in repos:
            raise SheetError(
                f"repository {repo!r} has no counted P2 signal in {db} "
                f"(repositories with counted signals: {', '.join(repos) or 'none'})"
            )
        draw = draw_sample(
            signals,
            per_bucket=per_bucket,
            seed=seed,
            exclude=labelled_shas(excluded),
            repo=repo,
        )
        if not draw.signals:
            raise SheetError(
                f"no signal left to draw: {len(signals)} counted P2 signal(s) in {db}, "
                f"{draw.excluded} of them already labelled"
            )
        views = _views(con, draw, prereg, repo_paths or {}, max_lines)
    criteria = read_criteria()
    out.mkdir(parents=True, exist_ok=True)
    texts = {
        labels: render_labels_csv(draw),
        out / "sheet.md": render_sheet(draw, views, criteria),
        out / "README.md": render_readme(
            draw,
            db=str(db),
            created=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            prereg=prereg,
            excluded_from=[str(p) for p in excluded],
            command=shlex.join(command),
        ),
    }
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    return Sheet(out, draw, tuple(texts))


def check_labels(files: Sequence[str]) -> str:
    """``reflect p2 check-labels``: the gate-label files (or folders of ``*.csv``) read with
    the parser P2 reads gate labels with (a bad row raises InvalidLabels naming file, line and
    field); what they hold, in one line; with two raters (two files, or a ``rater`` column),
    their agreement on the gate and the disagreements left to adjudicate."""
    paths = label_files(Path.cwd(), files)
    if not paths:
        raise SheetError(f"no *.csv file in {', '.join(files)}")
    labels = [lab for path in paths for lab in read_gate_labels([path])]
    own = read_own_labels(paths)
    failures = [sha for sha, g in own.consensus.items() if g != NOT_A_FAILURE]
    gates = Counter(own.consensus[sha] for sha in failures)
    by_gate = ", ".join(f"{g} {gates[g]}" for g in GATES if gates.get(g))
    text = (
        f"{', '.join(map(str, paths))}: {len(own.ratings)} signal(s) labelled, "
        f"{len(failures)} failure(s)"
        f"{f' ({by_gate})' if by_gate else ''}, "
        f"{sum(1 for g in own.consensus.values() if g == NOT_A_FAILURE)} not a failure"
    )
    raters = sorted(
        {lab.rater or str(p) for p in paths for lab in read_gate_labels([p])} - {ADJUDICATED}
    )
    if len(raters) < 2 or len(labels) == len(own.ratings):
        return text
    first, second = raters[:2]
    pairs = [(by[first], by[second]) for by in own.ratings.values() if first in by and second in by]
    kappa = cohens_kappa(pairs)
    agreement = (
        "undefined"
        if kappa is None
        else (f"{kappa.value:.2f} ({kappa.ci_low:.2f}-{kappa.ci_high:.2f})")
    )
    agreed = sum(1 for a, b in pairs if a == b)
    text += (
        f"\nraters {first} and {second}: {len(pairs)} signal(s) rated by both, {agreed} "
        f"agree on the gate, Cohen's kappa {agreement}"
    )
    if own.open:
        text += (
            f"\n{len(own.open)} disagreement(s) to adjudicate (a row with rater = "
            f"{ADJUDICATED} settles one; until then the signal is not used): "
            + ", ".join(sha[:10] for sha in own.open)
        )
    return text


def _views(
    con: duckdb.DuckDBPyConnection,
    draw: Draw,
    prereg: Preregistration,
    repo_paths: Mapping[str, str],
    max_lines: int,
) -> dict[str, tuple[CommitView, CommitView | None]]:
    """The fixing and introducing commit of each drawn signal, read from its repository."""
    sources: dict[str, GitSource] = {}
    for name in sorted({s.repo for s in draw.signals}):
        sources[name] = repo_source(con, name, repo_paths.get(name))
        check_commits(
            sources[name],
            [
                sha
                for s in draw.signals
                if s.repo == name
                for sha in (s.fixing_sha, s.introducing_sha)
                if sha is not None
            ],
        )
    non_code = prereg.p2.non_code_paths
    views: dict[str, tuple[CommitView, CommitView | None]] = {}
    for s in draw.signals:
        source = sources[s.repo]
        fixing = read_commit(source, s.fixing_sha, non_code_paths=non_code, max_lines=max_lines)
        introducing = (
            None
            if s.introducing_sha is None
            else read_commit(
                source,
                s.introducing_sha,
                non_code_paths=non_code,
                on_paths=fixing.paths,
                max_lines=max_lines,
            )
        )
        views[s.fixing_sha] = (fixing, introducing)
    return views
