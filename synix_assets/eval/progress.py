"""Progress of an eval run: the memories built and the questions asked, with an ETA.

Build time and question time are estimated apart: a build takes tens of seconds (most of it
embedding the index), a question tens of milliseconds, so one average over both is off by
orders of magnitude (dividing the first build's minutes by the first question answered gave
an ETA of hours that then fell to seconds). The time left is the builds still to do at the mean
of the builds done, plus the questions still to ask at the mean of those asked; until both
have been measured once there is no honest ETA, and none is given.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

QUESTION_LINE_EVERY_S = 2.0   # a questions line at most this often (the last one always)
BUILD_LINE_EVERY_S = 5.0      # a line on a build's layers at most this often


@dataclass
class Progress:
    """What a progress callback gets. `done`/`total` count questions (every branch's)."""

    stage: str    # "build" (a memory starts), "layer" / "layer-progress" (inside a build), "built", "questions"
    done: int
    total: int
    builds_done: int
    builds_total: int
    elapsed_s: float
    eta_s: float | None
    branch: str = ""
    detail: str = ""

    def line(self) -> str:
        who = f"branch {self.branch}: " if self.branch else ""
        eta = f", ETA {_duration(self.eta_s)}" if self.eta_s is not None else ""
        clock = f"{_duration(self.elapsed_s)} elapsed{eta}"
        built = f"memories built {self.builds_done}/{self.builds_total}"
        if self.stage == "build":
            return f"{who}building {self.detail} ({built}; {clock})"
        if self.stage in ("layer", "layer-progress"):
            return f"{who}  {self.detail}"
        if self.stage == "built":
            return f"{who}built {self.detail} ({built}; {clock})"
        return f"{who}questions {self.done}/{self.total} ({clock})"


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    minutes, s = divmod(seconds, 60)
    hours, m = divmod(minutes, 60)
    return f"{hours}h {m:02d}m" if hours else (f"{m}m {s:02d}s" if m else f"{s} s")


class Clock:
    """Counts one run's work (the branches of `run_branches` share one clock) and tells the
    callback, with the elapsed time and the ETA."""

    def __init__(self, builds_total: int, questions_total: int,
                 notify: Callable[[Progress], None] | None = None):
        self.builds_total, self.questions_total = builds_total, questions_total
        self.notify = notify or (lambda p: None)
        self.started = time.monotonic()
        self.builds_done = self.questions_done = 0
        self.build_s = self.question_s = 0.0
        self.branch = ""

    def eta_s(self) -> float | None:
        builds_left = self.builds_total - self.builds_done
        questions_left = self.questions_total - self.questions_done
        if (builds_left and not self.builds_done) or (questions_left and not self.questions_done):
            return None
        per_build = self.build_s / self.builds_done if self.builds_done else 0.0
        per_question = self.question_s / self.questions_done if self.questions_done else 0.0
        return builds_left * per_build + questions_left * per_question

    def tell(self, stage: str, detail: str = "") -> None:
        self.notify(Progress(stage, self.questions_done, self.questions_total, self.builds_done,
                             self.builds_total, time.monotonic() - self.started, self.eta_s(),
                             self.branch, detail))

    def build_done(self, seconds: float, detail: str) -> None:
        self.builds_done += 1
        self.build_s += seconds
        self.tell("built", detail)

    def questions_asked(self, n: int, seconds: float) -> None:
        self.questions_done += n
        self.question_s += seconds
        self.tell("questions")

    def layer_listener(self, case: str) -> Callable[[str, str, dict], None]:
        """A `run_build` progress callback: the build's layers as they start, advance and end."""
        def listen(layer: str, event: str, info: dict) -> None:
            counts = {"planned": f"{info.get('stale', 0)} to build, {info.get('cached', 0)} current",
                      "progress": f"{info.get('done', 0)} built",
                      "done": f"done ({info.get('built', 0)} built)" if isinstance(info, dict) and "built" in info
                      else "done"}
            self.tell("layer-progress" if event == "progress" else "layer",
                      f"{case}: {layer} {counts.get(event, event)}")
        return listen


class Printer:
    """Progress lines for a terminal (the CLI's stderr, or a Python caller's): every build's and
    layer's start and end; a layer's counts and the questions at most every few seconds."""

    def __init__(self, write: Callable[[str], None]):
        self.write = write
        self.last: dict[str, float] = {}

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        every = {"layer-progress": BUILD_LINE_EVERY_S, "questions": QUESTION_LINE_EVERY_S}.get(p.stage)
        last_question = p.stage == "questions" and p.done == p.total
        if every is not None and not last_question and now - self.last.get(p.stage, -every) < every:
            return
        self.last[p.stage] = now
        self.write(p.line())
