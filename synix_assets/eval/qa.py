"""QA accuracy: answer from the retrieved memory (+ the context document), then judge.

Only a real model answers (Anthropic or an OpenAI-compatible server): the offline extractive
summariser selects sentences, it cannot answer a question, and the deterministic fake would make
any accuracy figure meaningless — so offline runs report retrieval only and say so
(`OFFLINE_NOTE`). The judge follows the benchmark's published protocol (prompts.py); LoCoMo
answers also get LoCoMo's own token F1. Answers and verdicts go through the project's response
cache, so re-running an unchanged eval costs nothing.
"""
from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path

from synix_assets.eval import prompts
from synix_assets.eval.data import Case, Question
from synix_resources.llm.factory import choose_provider, make_client
from synix_resources.llm.types import LLMRequest

QA_PROVIDERS = ("anthropic", "openai-compatible")
OFFLINE_NOTE = ("QA accuracy not measured: no model is configured (the offline extractive summariser "
                "cannot answer questions); set ANTHROPIC_API_KEY or SYNIX_LLM_PROVIDER=openai-compatible "
                "and pass --qa")
MEMORY_CHARS = 24_000   # retrieved text given to the answerer
FULL_CONTEXT_CHARS = 600_000


def model_configured(env=None) -> bool:
    return choose_provider("", "", env) in QA_PROVIDERS


def full_context(case: Case) -> list[str]:
    """Every session, dated, in order: the full-context baseline's "retrieval"."""
    return [f"[{s.date or 'undated'}] " + "\n".join(f"{t.speaker}: {t.text}" for t in s.turns)
            for s in case.sessions]


_ARTICLES = re.compile(r"\b(a|an|the|and)\b")


def _tokens(text: str) -> list[str]:
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    return _ARTICLES.sub(" ", text).split()


def token_f1(prediction: str, gold: str) -> float:
    pred, ref = _tokens(prediction), _tokens(gold)
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if not same:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str, category: str) -> float:
    """LoCoMo's scoring: multi-hop = mean over the gold's comma-separated parts of the best F1
    against the prediction's parts; inference answers are cut at ';' first."""
    if category == "3":
        gold = gold.split(";")[0]
    if category == "1":
        parts = [g for g in gold.split(",") if g.strip()] or [gold]
        preds = [p for p in prediction.split(",") if p.strip()] or [prediction]
        return sum(max(token_f1(p, g) for p in preds) for g in parts) / len(parts)
    return token_f1(prediction, gold)


class QA:
    def __init__(self, benchmark: str, options: dict | None = None, *, cache_path: Path | None = None):
        options = dict(options or {})
        env = options.pop("env", None)
        self.client = make_client(cache_path=str(cache_path) if cache_path else "",
                                  env=env, **options)
        self.benchmark = benchmark
        self.identity = f"{self.client.provider}:{self.client.model}"
        self.protocol = ("LongMemEval evaluate_qa.py (yes/no per question type)" if benchmark == "longmemeval"
                         else "Mem0 LoCoMo LLM-as-a-judge (CORRECT/WRONG) + LoCoMo token F1")

    def close(self) -> None:
        self.client.close()

    def _ask(self, prompt: str, system: str | None, max_tokens: int, label: str):
        return self.client.complete(LLMRequest(prompt=prompt, system=system, temperature=0.0,
                                               max_tokens=max_tokens, label=label))

    def answer_and_judge(self, q: Question, passages: list[str], context_doc: str) -> dict:
        memory, used = [], 0
        limit = FULL_CONTEXT_CHARS if len(passages) > 20 else MEMORY_CHARS
        for p in passages:
            if used + len(p) > limit:
                break
            memory.append(p)
            used += len(p)
        context = f"What the agent always knows (its context document):\n{context_doc.strip()}\n\n" \
            if context_doc.strip() else ""
        asked = f"(Asked on {q.date[:10]}.)\n" if q.date else ""
        answer = self._ask(prompts.ANSWER_PROMPT.format(memory="\n\n---\n\n".join(memory) or "(nothing found)",
                                                        context=context, question=q.text, asked=asked),
                           prompts.ANSWER_SYSTEM, 200, f"answer {q.question_id}")
        verdict = self._judge(q, answer.text.strip())
        responses = (answer, verdict)
        out = {"answer": answer.text.strip(), "correct": self._correct(verdict.text),
               "judge": verdict.text.strip()[:300],
               "tokens_in": sum(r.input_tokens for r in responses),
               "tokens_out": sum(r.output_tokens for r in responses),
               "cost_usd": round(sum(r.cost_usd for r in responses), 6),
               "llm_calls": sum(0 if r.from_cache else 1 for r in responses)}
        if self.benchmark != "longmemeval":
            out["f1"] = round(locomo_f1(out["answer"], q.answer, q.category), 4)
        return out

    def _judge(self, q: Question, answer: str):
        if self.benchmark == "longmemeval":
            template = prompts.LONGMEMEVAL_ABSTENTION_JUDGE if q.abstention else \
                prompts.LONGMEMEVAL_JUDGE.get(q.category, prompts.LONGMEMEVAL_JUDGE["multi-session"])
            return self._ask(template.format(question=q.text, gold=q.answer, answer=answer), None, 10,
                             f"judge {q.question_id}")
        return self._ask(prompts.LOCOMO_JUDGE.format(question=q.text, gold=q.answer, answer=answer),
                         prompts.LOCOMO_JUDGE_SYSTEM, 160, f"judge {q.question_id}")

    def _correct(self, reply: str) -> bool:
        if self.benchmark == "longmemeval":
            return "yes" in reply.lower()
        match = re.search(r"\{.*\}", reply, re.S)
        label = ""
        if match:
            try:
                label = str(json.loads(match.group(0)).get("label", ""))
            except json.JSONDecodeError:
                label = ""
        text = (label or reply).upper()
        return "CORRECT" in text and "WRONG" not in text
