"""`synix eval`: LoCoMo, LongMemEval, SynixBench and the generated MEME-style benchmark through the project's pipeline; reports.

The logic lives in synix_assets/eval; this module parses options and prints.
"""
from __future__ import annotations

from pathlib import Path

import click

from synix_assets.cli.common import echo_json, json_option, project_dir_option, project_option

MODES = ("fts", "semantic", "hybrid")
BASELINES = ("raw-rag", "full-context", "core-only")
COMPARE = ("mem0",)


def _parse_modes(ctx, param, value: str) -> tuple[str, ...]:
    modes = tuple(dict.fromkeys(m.strip() for m in value.split(",") if m.strip()))
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise click.BadParameter(f"{(unknown or [value])[0]!r} is not a mode; use a "
                                 f"comma-separated list of {', '.join(MODES)}")
    return modes


@click.group(name="eval")
@project_option
def eval_group() -> None:
    """Measure the memory your pipeline builds on public memory benchmarks, against baselines."""


def _common(fn):
    options = [
        click.option("--modes", default="hybrid", show_default=True, callback=_parse_modes,
                     help="Comma-separated search modes to measure (fts, semantic, hybrid)."),
        click.option("--baseline", "baselines", multiple=True, type=click.Choice(BASELINES),
                     help="Also measure a baseline on the same questions (repeatable). raw-rag: the raw "
                          "turns indexed, no pipeline; full-context: every session in the prompt; core-only: "
                          "the pipeline's context document alone (these two need a model)."),
        click.option("--compare", "compare", multiple=True, type=click.Choice(COMPARE),
                     help="Also run another memory system on the same conversations and questions with "
                          "your configured model (mem0: pip install \"synix[mem0]\")."),
        click.option("--no-memory", is_flag=True, help="Measure only the baselines (no project needed)."),
        click.option("--name", default=None,
                     help="Name the memory's results carry (default: the project folder's name)."),
        click.option("--qa/--no-qa", default=None,
                     help="Answer and judge each question with the configured model "
                          "(default: on when a model is configured)."),
        click.option("--results", type=click.Path(dir_okay=False), default=None,
                     help="Results file (default: the project's .synix/eval/results.db)."),
        json_option("Print one JSON object with the results."),
        click.option("--branch", "branches", multiple=True, metavar="NAME",
                     help="Evaluate this branch's pipeline (repeatable: branches side by side; "
                          "default: the project's current branch)."),
        project_dir_option,
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _project(ctx, required: bool, branch: str | None = None):
    from synix_assets.cli.common import project_paths
    from synix_resources.errors import ProjectNotFound

    try:
        return project_paths(ctx, branch=branch)
    except ProjectNotFound:
        if required:
            raise
        return None


def _branches(ctx, names: tuple[str, ...], no_memory: bool, name: str | None) -> list[tuple[str, object]]:
    """(results name, ProjectPaths) of every branch to evaluate; [] for baselines only."""
    if no_memory:
        if names:
            raise click.UsageError("--branch evaluates a pipeline; drop --no-memory or --branch")
        return []
    if len(names) > 1 and name:
        raise click.UsageError("--name names one branch's results; with several --branch each keeps its own name")
    out = []
    for branch in dict.fromkeys(names) or [None]:
        project = _project(ctx, required=True, branch=branch)
        label = name or branch or (project.root.name if project.branch == "main" else project.branch)
        out.append((label, project))
    return out


def _run(ctx, bench, *, modes, baselines, compare, no_memory, name, qa, results, as_json, branches) -> None:
    from synix_assets.eval import qa as qa_mod
    from synix_assets.eval.progress import Printer
    from synix_assets.eval.results import results_path
    from synix_assets.eval.runner import EvalSettings, run_branches, run_eval

    systems = tuple(([] if no_memory else ["memory"]) + list(dict.fromkeys(baselines + compare)))
    if not systems:
        raise click.UsageError("--no-memory needs at least one --baseline or --compare")
    targets = _branches(ctx, branches, no_memory, name)
    project = targets[0][1] if targets else _project(ctx, required=False)
    use_qa = qa_mod.model_configured() if qa is None else qa
    settings = EvalSettings(modes=modes, systems=systems, qa=use_qa,
                            qa_mode="hybrid" if "hybrid" in modes else modes[0])
    db = Path(results) if results else (results_path(project.state_dir) if project else None)
    progress = Printer(lambda line: click.echo(line, err=True))  # stderr: stdout stays one JSON object with --json
    if targets:
        outcome = run_branches(bench, targets, settings=settings, results_db=db, progress=progress)
    else:
        # baselines only: a project, when there is one, keeps their files (raw-rag's index, mem0's
        # ingest) for the next run
        outcome = [run_eval(bench, project=project, branch=name or "baseline", settings=settings,
                            results_db=db, progress=progress)]
    if as_json:
        echo_json(_json_out(outcome), default=None)
    else:
        _print(outcome, db)


def _json_out(results: list[dict]) -> dict:
    """{"systems": {branch or baseline: {mode: metrics}}}; "run" is the first branch's run
    (every run under "runs")."""
    from synix_assets.eval.runner import combined

    return {"questions": results[0]["run"]["questions"], "run": results[0]["run"],
            "runs": [r["run"] for r in results], "systems": combined(results)}


def _print(results: list[dict], db) -> None:
    from rich.markup import escape

    from synix_assets.cli import render
    from synix_assets.eval.report import (ATTRIBUTION_NOTE, DESIGN_NOTE, attribution_rows, design_rows, rows_of,
                                          stamp_rows, table_rows)

    out = render.console()
    if not out.is_terminal:  # redirected to a file: never truncate the numbers
        out.width = max(out.width, 200)
    run = results[0]["run"]
    head, body = table_rows(rows_of(results))
    keep = [i for i in range(1, len(head)) if any(row[i] != "–" for row in body)]  # drop empty columns
    head, body = [head[i] for i in keep], [[row[i] for i in keep] for row in body]
    table = render.make_table(*head, title=f"{run['benchmark']} — {run['questions']} questions "
                              "(S = session, T = turn recall_any@k; all@k = strict recall_all@k)", left=("system", "mode"))
    for row in body:
        table.add_row(*row)
    out.print(table)
    rows = rows_of(results)
    head, body = design_rows(rows)
    table = render.make_table(*head[1:], title="design metrics (000 §9.5) [target]", left=("system", "mode"))
    for row in body:
        table.add_row(*row[1:])
    out.print(table)
    out.print(escape(DESIGN_NOTE))
    head, body = attribution_rows(rows)
    if body:
        table = render.make_table(*head[1:], title="where the misses were lost", left=("system", "mode", "category"))
        for row in body:
            table.add_row(*row[1:])
        out.print(table)
        out.print(escape(ATTRIBUTION_NOTE))
    head, body = stamp_rows([{"run": r["run"]} for r in results if r["run"].get("builds")])
    for row in body:
        out.print(f"{escape(row[3])}: pipeline {escape(row[4])}, builds {escape(row[5])} (stores: {escape(row[6])})")
    for r in (res["run"] for res in results):
        if r.get("builds"):
            out.print(f"{escape(r['branch'])}: built {len(r['builds'])} memories through the pipeline in "
                      f"{r['build_seconds']:.1f} s, {r['build_llm_calls']} LLM calls")
        for key, notice in r.get("notices", {}).items():
            out.print(f"[yellow]note:[/] {escape(key)}: {escape(notice)}")
    if run.get("qa_note"):
        out.print(f"[yellow]note:[/] {escape(run['qa_note'])}")
    if db is not None:
        ids = ", ".join(str(res["run"].get("run_id")) for res in results)
        out.print(f"recorded as run {ids} in {escape(str(db))}; `synix eval report` compares runs")


@eval_group.command()
@click.option("--data", "data", default=None, metavar="FILE",
              help="LoCoMo JSON file (a list of samples with 'conversation' and 'qa'); default: SYNIX_LOCOMO_DATA.")
@click.option("--conversations", default=None, help="Comma-separated sample ids to use (default: all).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N questions per conversation.")
@_common
@click.pass_context
def locomo(ctx, data, conversations, limit, **opts) -> None:
    """Evidence recall@1/5/10 (session and turn) of the memory your pipeline builds from LoCoMo.

    Each conversation's sessions become dated conversations of a source, built through the
    project's pipeline in a scratch workspace (.synix/eval/, sharing the LLM cache); every
    question of categories 1-4 is searched as an agent would, and a hit counts for the evidence
    sessions/turns it derives from.

    \b
    Examples:
      synix eval locomo --data locomo10.json --baseline raw-rag
      synix eval locomo --data locomo10.json --modes fts,hybrid --json
      synix eval locomo --data locomo10.json --baseline core-only --compare mem0   # with a model
      synix eval locomo --data locomo10.json --no-memory --baseline raw-rag --modes fts,semantic,hybrid
    """
    from synix_assets.eval.data import load_locomo

    convs = [c.strip() for c in conversations.split(",")] if conversations else None
    _run(ctx, load_locomo(_data(data, "locomo"), conversations=convs, limit=limit), **opts)


@eval_group.command()
@click.option("--data", "data", default=None, metavar="FILE",
              help="longmemeval_s.json, longmemeval_m.json or longmemeval_oracle.json; default: SYNIX_LONGMEMEVAL_DATA.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="The first N questions.")
@_common
@click.pass_context
def longmemeval(ctx, data, limit, **opts) -> None:
    """LongMemEval through the project's pipeline: each question's haystack is one memory.

    Reports LongMemEval's own metrics (session/turn recall_any@k, recall_all@k, ndcg@k;
    abstention questions excluded) next to ours.

    \b
    Examples:
      synix eval longmemeval --data longmemeval_s.json --limit 50 --baseline raw-rag
    """
    from synix_assets.eval.data import load_longmemeval

    _run(ctx, load_longmemeval(_data(data, "longmemeval"), limit=limit), **opts)


def _data(given: str | None, benchmark: str) -> str:
    from synix_resources.settings import settings

    data = given or getattr(settings(), f"{benchmark}_data")
    if not data:
        raise click.UsageError(f"give --data FILE (or set SYNIX_{benchmark.upper()}_DATA)")
    return data


@eval_group.command()
@click.option("--results", type=click.Path(dir_okay=False), default=None,
              help="Results file (default: the project's .synix/eval/results.db).")
@json_option("Print one JSON object with the result.")
@project_option
@click.pass_context
def synixbench(ctx, results, as_json) -> None:
    """SynixBench: altitude questions over the bundled demo corpus, scored three ways.

    Builds the demo conversations through the project's pipeline and checks, per question:
    found at the requested altitude, the right kind of answer for that altitude, and a
    provenance chain that reaches the expected source conversations.

    \b
    Example:
      synix eval synixbench --json
    """
    from synix_assets.eval.results import results_path
    from synix_assets.eval.synixbench import run_synixbench

    project = _project(ctx, required=True)
    db = Path(results) if results else results_path(project.state_dir)
    result = run_synixbench(project, branch=project.root.name if project.branch == "main" else project.branch,
                             results_db=db)
    if as_json:
        echo_json(result, default=None)
        return
    from synix_assets.cli import render

    out = render.console()
    table = render.make_table("id", "kind", "altitude", "found", "fits", "provenance",
                              title=f"SynixBench {result['version']} — {result['questions']} questions",
                              left=("id", "kind", "altitude"))
    for q in result["per_question"]:
        table.add_row(q["id"], q["kind"], q["altitude"], *("yes" if q[k] else "no" for k in
                                                           ("found_at_altitude", "fits_altitude", "provenance_ok")))
    out.print(table)
    s = result["scores"]
    out.print(f"found at altitude {s['found_at_altitude']:.2f} · fits the altitude {s['fits_altitude']:.2f} · "
              f"provenance {s['provenance_ok']:.2f}")


@eval_group.command()
@click.option("--seed", type=int, default=7, show_default=True, help="The generator's seed (same seed, same world).")
@click.option("--people", type=click.IntRange(2, 12), default=6, show_default=True, help="Fictitious people.")
@click.option("--projects", type=click.IntRange(1, 6), default=3, show_default=True, help="Fictitious projects.")
@click.option("--sessions", type=click.IntRange(8, 120), default=30, show_default=True, help="Dated conversations.")
@click.option("--unseen", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="Share of statements said in phrasings the offline rules do not know.")
@click.option("--dir", "workdir", type=click.Path(file_okay=False), default=None,
              help="Where the scratch memory is built (default: the project's .synix/eval/meme/seed-N).")
@json_option("Print one JSON object with the result (every probe with both answers).")
@project_option
@click.pass_context
def meme(ctx, seed, people, projects, sessions, unseen, workdir, as_json) -> None:
    """A generated benchmark of memory that changes, per MEME task type, beside raw RAG.

    Fictitious people and projects whose facts change over time, are forgotten with `forget`, or
    imply others through declared rules; probes answered by the brief (Tier 2 facts, `as_of`)
    and by raw RAG (the turns searched as they are). Exact recall, Tracking, Deletion, Cascade,
    Absence (arXiv 2605.12477).

    \b
    Examples:
      synix eval meme
      synix eval meme --seed 3 --sessions 60 --json
    """
    from synix_assets.eval.meme import TASKS
    from synix_assets.eval.meme_run import run_meme, scratch_dir

    if workdir is None:
        project = _project(ctx, required=False)
        if project is None:
            raise click.UsageError("give --dir FOLDER (or run inside a Synix project)")
        folder = scratch_dir(project, seed)
    else:
        folder = Path(workdir).expanduser().resolve()
    result = run_meme(folder, seed=seed, people=people, projects=projects, sessions=sessions, unseen=unseen,
                      progress=lambda line: click.echo(line, err=True))
    if as_json:
        echo_json(result, default=None)
        return
    from synix_assets.cli import render

    out = render.console()
    table = render.make_table("task", "probes", "memory (brief + as_of)", "raw RAG",
                              title=f"MEME-style benchmark, seed {seed}: {result['conversations']} conversations, "
                                    f"{len(result['forgotten'])} forgotten, {unseen:.0%} unseen phrasings", left=("task",))
    s = result["scores"]
    for task in TASKS:
        mem, rag = s["memory"][task], s["raw-rag"][task]
        table.add_row(task, str(mem["probes"]), _pct(mem), _pct(rag))
    out.print(table)
    out.print(f"built in {result['build_seconds']} s, forgot in {result['forget_seconds']} s; scratch memory: "
              f"{render.safe(str(folder / 'memory'))}")


def _pct(row: dict) -> str:
    return "–" if row["accuracy"] is None else f"{row['correct']}/{row['probes']} ({row['accuracy']:.0%})"


@eval_group.command()
@click.option("--results", "results", multiple=True, type=click.Path(dir_okay=False),
              help="Results file(s) to read (repeatable; default: the project's).")
@click.option("--benchmark", default=None, help="Only this benchmark (locomo, longmemeval, synixbench).")
@click.option("--branch", "branches", multiple=True, help="Only these branches (repeatable).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write an HTML report with charts to this file.")
@click.option("--all-data", is_flag=True,
              help="Also show runs on older data files (default: each benchmark's newest data file).")
@json_option("Print one JSON object.")
@project_dir_option
@click.pass_context
def report(ctx, results, benchmark, branches, html_path, all_data, as_json) -> None:
    """The latest recorded results side by side (markdown), without re-running anything.

    \b
    Examples:
      synix eval report
      synix eval report --html report.html
      synix eval report --results main/.synix/eval/results.db --results topical/.synix/eval/results.db
    """
    from synix_assets.eval import report as rep
    from synix_assets.eval.results import open_existing, results_path
    from synix_resources.errors import EvalResultsError

    files = [Path(r) for r in results] or [results_path(_project(ctx, required=True).state_dir)]
    entries = []
    for f in files:
        with open_existing(f) as store:
            entries += store.latest(benchmark, list(branches) or None)
    if not all_data:
        entries = rep.newest_data(entries)
    if not entries:
        raise EvalResultsError(f"no recorded runs match in {', '.join(map(str, files))}",
                               hint="drop --benchmark/--branch or run an eval first")
    if html_path:
        Path(html_path).write_text(rep.html_report(entries), encoding="utf-8")
    if as_json:
        echo_json(rep.to_json(entries), default=None)
    else:
        click.echo(rep.markdown(entries))
        if html_path:
            click.echo(f"HTML report written to {html_path}", err=True)
