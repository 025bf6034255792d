"""The HTTP JSON API of agent-written memories under /v1 (Syke's tools as routes): writes
(POST, JSON bodies) and reads (history, links, cross-reference), thin over the application
layer like every other route. A write is on disk (the branch's memory-ops log) when it answers."""
from __future__ import annotations

from typing import ClassVar

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, model_validator

from synix_assets.engine.agent_memory import MemoryWriter
from synix_assets.app.memory import MAX_LIMIT
from synix_assets.app.vocabulary import resolve
from synix_assets.serve.api import BRANCH, memory_for

router = APIRouter(prefix="/v1", tags=["agent memories"])
AS_OF = Query(None, description="ISO date/time: what was held then.")


class _Body(BaseModel):
    """A write's JSON body, named as the vocabulary says: older spellings (`content`,
    `evidence`) renamed, an unknown field refused naming what is accepted (a 400)."""
    model_config = ConfigDict(extra="forbid")
    capability: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data):
        return resolve(cls.capability, data, door="python") if isinstance(data, dict) else data


class NewMemory(_Body):
    capability = "create_memory"
    content: str
    source_event_ids: list[str] | None = None
    valid_from: str | None = None


class MemoryEdit(_Body):
    capability = "update_memory"
    new_content: str
    source_event_ids: list[str] | None = None
    valid_from: str | None = None


class Supersession(_Body):
    capability = "supersede_memory"
    new_content: str
    reason: str | None = None
    source_event_ids: list[str] | None = None
    valid_from: str | None = None


class Retirement(_Body):
    capability = "deactivate_memory"
    reason: str
    valid_from: str | None = None


class NewLink(_Body):
    capability = "create_link"
    source_id: str
    target_id: str
    reason: str


def _writer(request: Request, branch: str) -> MemoryWriter:
    return MemoryWriter(memory_for(request, branch).paths)


@router.post("/memories", summary="create_memory: a new memory citing its evidence records")
def create_memory(request: Request, body: NewMemory, branch: str = BRANCH) -> dict:
    return _writer(request, branch).create_memory(body.content, evidence=body.source_event_ids,
                                                  valid_from=body.valid_from)


@router.post("/memories/{memory_id}/update", summary="update_memory: a new version, same memory")
def update_memory(request: Request, memory_id: str, body: MemoryEdit, branch: str = BRANCH) -> dict:
    return _writer(request, branch).update_memory(memory_id, body.new_content, evidence=body.source_event_ids,
                                                  valid_from=body.valid_from)


@router.post("/memories/{memory_id}/supersede", summary="supersede_memory: replaced by a new memory")
def supersede_memory(request: Request, memory_id: str, body: Supersession,
                     branch: str = BRANCH) -> dict:
    return _writer(request, branch).supersede_memory(memory_id, body.new_content, body.reason,
                                                     evidence=body.source_event_ids,
                                                     valid_from=body.valid_from)


@router.post("/memories/{memory_id}/deactivate", summary="deactivate_memory: retired, kept in history")
def deactivate_memory(request: Request, memory_id: str, body: Retirement, branch: str = BRANCH) -> dict:
    return _writer(request, branch).deactivate_memory(memory_id, body.reason, valid_from=body.valid_from)


@router.post("/links", summary="create_link: two memories and the reason they belong together")
def create_link(request: Request, body: NewLink, branch: str = BRANCH) -> dict:
    return _writer(request, branch).create_link(body.source_id, body.target_id, body.reason)


@router.get("/memories", summary="list_active_memories: the memories held now, id and first line")
def list_active_memories(request: Request, limit: int = Query(50, ge=1, le=MAX_LIMIT),
                         branch: str = BRANCH) -> dict:
    return memory_for(request, branch).active_memories(limit, branch)


@router.get("/memories/{memory_id}", summary="get_memory: one memory (as of a time)")
def get_memory(request: Request, memory_id: str, as_of: str | None = AS_OF, branch: str = BRANCH) -> dict:
    return memory_for(request, branch).record(memory_id, branch, as_of=as_of)


@router.get("/memories/{memory_id}/history", summary="get_memory_history: the supersession chain")
def memory_history(request: Request, memory_id: str, branch: str = BRANCH) -> dict:
    return memory_for(request, branch).memory_history(memory_id, branch)


@router.get("/memories/{memory_id}/links", summary="follow_links: linked memories with reasons")
def follow_links(request: Request, memory_id: str, branch: str = BRANCH) -> dict:
    return memory_for(request, branch).follow_links(memory_id, branch)


@router.get("/cross_reference", summary="cross_reference: memories beside the records, by source")
def cross_reference(request: Request, topic: str = Query(..., description="What to look for (older spellings: q, query)."),
                    as_of: str | None = AS_OF, limit: int = Query(10, ge=1, le=MAX_LIMIT),
                    branch: str = BRANCH) -> dict:
    return memory_for(request, branch).cross_reference(topic, branch, as_of=as_of, limit=limit)
