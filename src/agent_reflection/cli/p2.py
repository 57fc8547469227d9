"""``reflect p2 sheet`` and ``reflect p2 check-labels``: a team labels the gates of its own P2
signals (docs/experiments.md, "Label your own P2 signals")."""

from __future__ import annotations

import click

from agent_reflection.cli._groups import db_option, p2_group


@p2_group.command("sheet")
@db_option
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder for labels.csv, sheet.md and README.md (created; an existing labels.csv is "
    "kept unless --force).",
)
@click.option(
    "--per-bucket",
    type=click.IntRange(min=1),
    default=None,
    help="Signals drawn from each P2 bucket (ci, human-review, only-self-reflection), all of a "
    "bucket with fewer. Default: [p2] gate_sample_per_bucket of the pre-registration (20).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed of the draw. Default: [p2] gate_sample_seed. The same database, seed and "
    "exclusions draw the same signals in the same order.",
)
@click.option("--repo", help="Draw only from this repository (its name in commits.repo).")
@click.option(
    "--exclude-labelled",
    "exclude_paths",
    multiple=True,
    type=click.Path(exists=True),
    help="A label file, or a folder of *.csv, whose fixing shas are not drawn (an earlier "
    "sheet's labels.csv, filled or not). Repeatable. The files of the pre-registration's "
    "[p2] gate_labels_paths are skipped too, unless --include-registered.",
)
@click.option(
    "--include-registered",
    is_flag=True,
    help="Also draw signals already labelled in the files of [p2] gate_labels_paths (by "
    "default a new round skips them, so nobody labels a signal twice).",
)
@click.option(
    "--repo-path",
    "repo_path_values",
    multiple=True,
    metavar="NAME=PATH",
    help="Read repository NAME's commits from PATH (a clone or bundle) instead of where "
    "`reflect load git` read it. Repeatable.",
)
@click.option(
    "--max-diff-lines",
    type=click.IntRange(min=20),
    default=200,
    show_default=True,
    help="Lines of diff shown per commit; the sheet names what it leaves out.",
)
@click.option("--force", is_flag=True, help="Overwrite labels.csv in --out if it is there.")
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Pre-registration TOML (P2's rules and the defaults above). Default, first that "
    "applies: $REFLECT_PREREGISTRATION, ./preregistration.toml, the registered file.",
)
def sheet_command(
    db_path: str | None,
    out_dir: str,
    per_bucket: int | None,
    seed: int | None,
    repo: str | None,
    exclude_paths: tuple[str, ...],
    include_registered: bool,
    repo_path_values: tuple[str, ...],
    max_diff_lines: int,
    force: bool,
    prereg_path: str | None,
) -> None:
    """Draw P2's counted signals for gate labelling, blind to P2's bucket.

    Runs P2's signal derivation and bucket rules on the database (loaded with `reflect load
    git --szz`), draws --per-bucket signals from each bucket at random (seeded), and writes
    into --out:

    \b
      labels.csv  one row per signal, the second rater's columns; repo, fixing_sha, kind,
                  subject and p2_introducing_sha filled, the columns you judge blank
      sheet.md    the criteria, then per signal the fixing commit (message, stat, diff of its
                  code files) and P2's introducing commit (subject, stat, its diff on the
                  fix's files, the blamed-line count), read by git from the loaded repository
      README.md   how the sample was drawn (seed, counts per bucket, database, date)

    Why per bucket: P2's estimate corrects each bucket by the gates labelled in it (a row of
    the correction matrix per bucket), so each bucket needs its own labels; drawing in
    proportion to bucket size would leave a small bucket (flask: 4 of 63 signals are
    human-review) nearly unlabelled. The rows are shuffled, and neither file shows P2's bucket
    or rule, so the rating is blind to them. Fill labels.csv, then run `reflect p2
    check-labels`.

    \b
    Examples:
      reflect p2 sheet --db data/reflection.duckdb --out labels/round1
      reflect p2 sheet --out labels/round2 --exclude-labelled labels/round1/labels.csv
      reflect p2 sheet --out labels/flask --repo flask --per-bucket 10 --seed 7
    """
    from agent_reflection.experiments.p2.sheet import make_sheet
    from agent_reflection.store.db import resolve_db_path

    repo_paths: dict[str, str] = {}
    for value in repo_path_values:
        name, sep, repo_path = value.partition("=")
        if not sep or not name or not repo_path:
            raise click.BadParameter(f"{value!r}: expected NAME=PATH", param_hint="--repo-path")
        repo_paths[name] = repo_path
    sheet = make_sheet(
        resolve_db_path(db_path).absolute(),
        out_dir,
        per_bucket=per_bucket,
        seed=seed,
        repo=repo,
        exclude_paths=exclude_paths,
        include_registered=include_registered,
        repo_paths=repo_paths,
        max_lines=max_diff_lines,
        force=force,
        preregistration_path=prereg_path,
    )
    draw = sheet.draw
    counts = ", ".join(f"{b} {draw.drawn[b]} of {draw.available[b]}" for b in draw.drawn)
    click.echo(
        f"{len(draw.signals)} signal(s) drawn (seed {draw.seed}, {draw.per_bucket} per bucket: "
        f"{counts}; {draw.excluded} skipped as labelled)"
    )
    for path in sheet.files:
        click.echo(f"  {path}")
    click.echo(
        f"Next: read sheet.md, fill labels.csv, run `reflect p2 check-labels {sheet.files[0]}`"
    )


@p2_group.command("check-labels")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True))
def check_labels_command(files: tuple[str, ...]) -> None:
    """Check filled gate-label files (a sheet's labels.csv, or folders of *.csv).

    Reads FILES with the parser P2 reads gate labels with, so a file that passes here loads
    there. A bad row stops it with the file, line and field: is_failure not yes/no (blank
    included), introducing_ok not yes/partly/no, an unknown gate_label, a failure without a
    gate_label or a non-failure with one, a fixing_sha that is not 40 hex digits or that is
    labelled twice, a category that is not one of the README's or contradicts is_failure
    (cosmetic with is_failure = yes). On success it prints the counts of failures by gate;
    list the files in the pre-registration's [p2] gate_labels_paths to use them.

    \b
    Examples:
      reflect p2 check-labels labels/round1/labels.csv
      reflect p2 check-labels labels/
    """
    from agent_reflection.experiments.p2.sheet import check_labels

    click.echo(check_labels(files))
