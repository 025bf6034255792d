"""A transform's output validator (design §4.2, `transform(..., validate=fn)`) and its verdicts.

`fn(record)` is called on each output before it is stored; `record` is the output as a `Record`
(its content, the metadata it is stored with, its layer and group key). What it returns decides:

- `None` or `True`: the output is kept.
- `Flag("reason")`: the output is kept and marked (`meta.custom.validation_flags`, the outcome's
  `flagged` flag): a doubt worth a look, not worth refusing the memory over.
- `False`: the output is refused ("validator NAME refused the output").
- a non-empty `str`: the output is refused with that text as the reason.

A validator that raises, or returns anything else, refuses the output too, with one line saying
so. A refused output is not stored: the partition is recorded as failed (design §10.2 — logged,
the build goes on, `synix run` exits 1, `synix status`/`plan` and Dagster's check show it), the
layers above build from what is there, and the next build retries it.

A validator is part of its step's version (`identity`): changing it rebuilds the layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from synix_assets.pipeline.prompts import callable_identity
from synix_resources.process import endings


class Flag(str):
    """Returned by a validator: keep the output, marked with this reason."""


@dataclass(frozen=True)
class Verdict:
    refused: str = ""  # the reason the output is refused; "" when it is kept
    flag: str = ""  # the reason it is kept but marked


def identity(fn: Callable[..., Any]) -> str:
    """What the step's version hashes for the validator: its source (or explicit version)."""
    return "validator:" + callable_identity(fn, "validator")


def name_of(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__name__", "validator")


def judge(fn: Callable[..., Any], record: Any) -> Verdict:
    """The validator's verdict on one output. User code: whatever it raises fails this output
    alone (never the build), and an exit inside it (sys.exit, os._exit) is refused like a raise."""
    name = name_of(fn)
    try:
        with endings.kept():
            answer = fn(record)
    except Exception as exc:  # the user's function failed on this output: it is not accepted
        return Verdict(refused=f"validator {name} raised {type(exc).__name__}: {exc}")
    except (SystemExit, endings.ProcessEnding) as exc:
        return Verdict(refused=f"validator {name} tried to end the process ({exc!s})")
    if answer is None or answer is True:
        return Verdict()
    if isinstance(answer, Flag):
        return Verdict(flag=" ".join(answer.split()) or f"flagged by {name}")
    if answer is False:
        return Verdict(refused=f"validator {name} refused the output")
    if isinstance(answer, str) and answer.strip():
        return Verdict(refused=f"validator {name} refused the output: {' '.join(answer.split())}")
    return Verdict(refused=f"validator {name} returned {type(answer).__name__} {answer!r}; expected "
                           "None/True (keep), Flag(reason) (keep, marked), False or a reason (refuse)")
