"""The reference Synix (PyPI `synix==0.22.2`) for side-by-side benchmarks, in its own venv.

    python benchmarks/reference_synix.py ensure            # create/check the venv, print its python
    REFERENCE_PY benchmarks/reference_synix.py build DIR -j 20   # (run by bench_compare.py)

`ensure` creates `$SYNIX_REFERENCE_VENV` (default /work/refvenv) with `python -m venv` and
installs the pinned version with its own pip if it is not there yet; it never touches the venv
Synix itself runs in. Any failure ends the benchmark with one line saying what to do.

`build` runs in the reference venv: it replaces the reference's LLM client with the same kind of
fake Synix's `fake` provider is — deterministic, input-dependent short summaries, no network,
sleeping `SYNIX_FAKE_LATENCY_S` per call — and then runs the reference's own CLI
(`synix build pipeline.py --plain -j N`) on a project that `init_project` laid out: the reference's
monthly template (transcripts → episodes → monthly → core, full-text search over the three
layers, a context file), with semantic search off because our default pipeline has none.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

VERSION = "0.22.2"
DEFAULT_VENV = "/work/refvenv"

PIPELINE = '''from synix import FlatFile, Pipeline, SearchSurface, Source, SynixSearch
from synix.ext import CoreSynthesis, EpisodeSummary, MonthlyRollup

pipeline = Pipeline("personal-memory")
pipeline.source_dir = "./sources"
pipeline.build_dir = "./build"
pipeline.llm_config = {"provider": "anthropic", "model": "claude-haiku-4-5-20251001",
                       "temperature": 0.3, "max_tokens": 1024}
transcripts = Source("transcripts")
episodes = EpisodeSummary("episodes", depends_on=[transcripts])
monthly = MonthlyRollup("monthly", depends_on=[episodes])
core = CoreSynthesis("core", depends_on=[monthly], context_budget=10000)
memory_search = SearchSurface("memory-search", sources=[episodes, monthly, core], modes=["fulltext"])
pipeline.add(transcripts, episodes, monthly, core, memory_search)
pipeline.add(SynixSearch("search", surface=memory_search))
pipeline.add(FlatFile("context-doc", sources=[core], output_path="./build/context.md"))
'''


class ReferenceUnavailable(SystemExit):
    pass


def venv_dir() -> Path:
    return Path(os.environ.get("SYNIX_REFERENCE_VENV", DEFAULT_VENV))


def ensure() -> Path:
    """The reference venv's python, installing synix==VERSION there first if needed."""
    venv = venv_dir()
    py = venv / "bin" / "python"
    if not py.exists():
        base = shutil.which("python3.11") or shutil.which("python3") or sys.executable
        done = subprocess.run([base, "-m", "venv", str(venv)], capture_output=True, text=True)
        if done.returncode != 0:
            raise ReferenceUnavailable(f"reference Synix: cannot create the venv {venv}: "
                                       f"{done.stderr.strip()[-300:]} (set SYNIX_REFERENCE_VENV "
                                       f"to a writable folder)")
    if _installed(py) != VERSION:
        done = subprocess.run([str(py), "-m", "pip", "install", "-q", f"synix=={VERSION}"],
                              capture_output=True, text=True)
        if done.returncode != 0 or _installed(py) != VERSION:
            raise ReferenceUnavailable(
                f"reference Synix: `pip install synix=={VERSION}` into {venv} failed: "
                f"{done.stderr.strip().splitlines()[-1:] or ['no output']} (install it there by "
                f"hand: {py} -m pip install synix=={VERSION})")
    return py


def _installed(py: Path) -> str | None:
    done = subprocess.run([str(py), "-I", "-c", "import importlib.metadata as m;print(m.version('synix'))"],
                          capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def init_project(root: Path, exports: list[Path]) -> Path:
    """A reference project at `root` reading these export files; returns its folder."""
    sources = root / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    for f in exports:
        shutil.copy2(f, sources / f.name)
    (root / "pipeline.py").write_text(PIPELINE, encoding="utf-8")
    return root


def _fake_llm() -> None:
    """Replace the reference's LLM client with a deterministic fake (runs in the reference venv)."""
    import hashlib
    import re
    import time
    from collections import Counter

    from synix.build import llm_client as lc

    latency = float(os.environ.get("SYNIX_FAKE_LATENCY_S", "0") or 0)
    word = re.compile(r"[A-Za-z][A-Za-z0-9_-]{3,}")

    def create_client(self):
        return None

    def complete(self, messages, max_tokens=None, temperature=None, artifact_desc="artifact"):
        if latency:
            time.sleep(latency)
        prompt = "\n".join(str(m.get("content", "")) for m in messages)
        counts = Counter(w.lower() for w in word.findall(prompt))
        words = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:6]]
        digest = hashlib.sha256(prompt.encode()).hexdigest()[:10]
        text = f"[fake {digest}] summary of: {', '.join(words) or 'nothing'}."
        return lc.LLMResponse(content=text, model="fake-v1", input_tokens=len(prompt) // 4,
                              output_tokens=len(text) // 4, total_tokens=(len(prompt) + len(text)) // 4)

    lc.LLMClient._create_client = create_client
    lc.LLMClient.complete = complete

    # 0.22.2 embeds a search surface even with no embedding_config (an empty one means its
    # fastembed default), which downloads a model; our default pipeline is full-text only, so
    # the reference indexes full-text only too.
    from synix.search.indexer import SearchIndexProjection

    generate = SearchIndexProjection._generate_embeddings

    def generate_if_configured(self, embedding_config, artifacts, synix_logger=None):
        if embedding_config:
            generate(self, embedding_config, artifacts, synix_logger)

    SearchIndexProjection._generate_embeddings = generate_if_configured


def _build(argv: list[str]) -> None:
    project, rest = Path(argv[0]).resolve(), argv[1:]
    _fake_llm()
    os.chdir(project)
    from synix.cli.main import main

    sys.argv = ["synix", "build", "pipeline.py", "--plain", *rest]
    main()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "build":
        _build(sys.argv[2:])
    elif len(sys.argv) > 1 and sys.argv[1] == "ensure":
        print(ensure())
    else:
        raise SystemExit(__doc__)
