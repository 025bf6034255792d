"""The design document's own code blocks (../shared/design/000_…), read from the document itself so
the acceptance tests run them as written, and a driver that runs a script the way the design's
comments show its output: statement by statement, an expression statement's value echoed (as in
a Python session), in a real subprocess."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.corpus import DATA, DESIGN

REPO = Path(__file__).resolve().parents[2]
CHATGPT = DATA / "chatgpt" / "pkuppens-my_chat_gpt__history_download_conversations.json"
CLAUDE = DATA / "claude" / "simonw-claude-to-sqlite__tests_artifacts.json"
LOCOMO = DATA / "locomo" / "locomo10-dev-conv0-4.json"

# Runs the script file argv[1] as __main__, echoing the value of each expression statement.
DRIVER = r'''
import ast, sys
path = sys.argv[1]
source = open(path, encoding="utf-8").read()
namespace = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
sys.path.insert(0, str(__import__("pathlib").Path(path).parent))
for node in ast.parse(source, path).body:
    if isinstance(node, ast.Expr):
        code = compile(ast.Interactive([node]), path, "single")
    else:
        code = compile(ast.Module([node], []), path, "exec")
    exec(code, namespace)
'''


def design_text() -> str:
    (doc,) = sorted(DESIGN.glob("000_*"))
    return doc.read_text(encoding="utf-8")


def section(heading: str) -> str:
    """The text under a heading such as '### 4.2 Pipeline Definition', up to the next heading of
    the same or a higher level."""
    text = design_text()
    start = text.index(heading + "\n")
    level = len(heading) - len(heading.lstrip("#"))
    end = re.compile(rf"^#{{1,{level}}} ", re.M)
    rest = text[start + len(heading) + 1:]
    stop = next((m.start() for m in end.finditer(rest)
                 if not _inside_fence(rest, m.start())), len(rest))
    return rest[:stop]


def _inside_fence(text: str, pos: int) -> bool:
    return text[:pos].count("```") % 2 == 1


def blocks(heading: str, language: str = "python") -> list[str]:
    """The fenced code blocks of one section, in order."""
    return re.findall(rf"```{language}\n(.*?)```", section(heading), re.S)


def block(heading: str, index: int = 0, *, fill: dict[str, str] | None = None) -> str:
    """One block as written, with only the given placeholders filled (each must occur)."""
    code = blocks(heading)[index]
    for old, new in (fill or {}).items():
        assert old in code, f"{old!r} is not in the design's block under {heading!r}"
        code = code.replace(old, new)
    return code


EXPORTS = {"~/exports/chatgpt.json": str(CHATGPT), "~/exports/claude.json": str(CLAUDE)}


def run_script(folder: Path, name: str, code: str, *, env: dict | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
    """Write `code` as folder/name and run it with the driver; the offline extractive
    summariser is the provider (no key, no SYNIX_LLM_PROVIDER)."""
    script = folder / name
    script.write_text(code, encoding="utf-8")
    clean = {k: v for k, v in os.environ.items()
             if k not in ("SYNIX_LLM_PROVIDER", "ANTHROPIC_API_KEY", "SYNIX_LLM_API_KEY", "SYNIX_PROJECT")}
    clean["PYTHONPATH"] = str(REPO)
    clean.update(env or {})
    return subprocess.run([sys.executable, "-c", DRIVER, str(script)], cwd=folder, env=clean,
                          capture_output=True, text=True, timeout=timeout)


def small_locomo(tmp: Path, sessions: int = 6) -> Path:
    """The first LoCoMo dev conversation cut to its first `sessions` sessions (questions whose
    evidence lies in later sessions are dropped by the loader), so an eval takes seconds."""
    (sample, *_rest) = json.loads(LOCOMO.read_text(encoding="utf-8"))
    conv = {k: v for k, v in sample["conversation"].items()
            if not k.startswith("session_") or int(k.split("_")[1]) <= sessions}
    path = tmp / "locomo-small.json"
    path.write_text(json.dumps([{**sample, "conversation": conv}]), encoding="utf-8")
    return path
