"""`synix pack OUT.db` / `synix unpack IN.db DIR`: a project as one portable SQLite file
(app/portable.py)."""
from __future__ import annotations

import click

from synix_assets.cli.common import echo_json, json_option, project_dir_option, project_paths


@click.command("pack")
@click.argument("out", type=click.Path(dir_okay=False))
@json_option("Print where the file is, how many files it holds and their bytes as JSON.")
@project_dir_option
@click.pass_context
def pack(ctx, out, as_json) -> None:
    """Write the project into one SQLite file OUT (pipeline, exports, store, search index,
    evidence ledger, agent memories, config, branches).

    \b
    Example:
      synix pack ~/memory.synix.db        # then, on another machine:
      synix unpack memory.synix.db ./memory && cd memory && synix run
    """
    from synix_assets.python_api.pipeline import Pipeline

    answer = Pipeline.load(project_paths(ctx).root).pack(out)
    if as_json:
        echo_json(answer)
    else:
        click.echo(f"packed {answer['files']} file(s), {answer['bytes']:,} bytes, into {answer['path']}")


@click.command("unpack")
@click.argument("source", type=click.Path(dir_okay=False))
@click.argument("folder", type=click.Path(file_okay=False))
@json_option("Print the new project's folder and what the file says about it as JSON.")
def unpack(source, folder, as_json) -> None:
    """Make a project in FOLDER (new or empty) from a file `synix pack` wrote; a damaged or
    foreign file is refused with one line."""
    from synix_assets.app.portable import unpack as unpack_file

    answer = unpack_file(source, folder)
    if as_json:
        echo_json(answer)
    else:
        click.echo(f"unpacked {answer['project']} ({answer['files']} file(s), packed "
                   f"{answer['packed_at']}) into {answer['path']}; `cd` there: `synix run` has nothing "
                   f"to do and `synix search` answers")
