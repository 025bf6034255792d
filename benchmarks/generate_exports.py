"""Seeded synthetic ChatGPT / Claude exports for benchmarks and scale tests.

    python benchmarks/generate_exports.py --n 2000 --months 24 --format chatgpt --out FILE
    python benchmarks/generate_exports.py --target-mb 200 --format chatgpt --out FILE

Same arguments → byte-identical file. Text comes from a pre-built pool of varied sentences per
topic (people, places, projects, numbers), so generation is dominated by `json.dumps` and
writes ~200 MB in a few seconds. Shapes follow docs in shared/design/export-formats.md: ChatGPT
entries are trees with a hidden system root and the occasional regenerated answer; Claude
entries have `chat_messages` with `content` blocks.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

TOPICS = {
    "rust": ("Rust CLI", ["the borrow checker", "clap argument parsing", "the release binary",
             "cargo workspaces", "error handling with anyhow", "the config loader", "serde derive",
             "integration tests", "the TUI layout", "cross-compiling for ARM"]),
    "career": ("career", ["the offer letter", "equity vesting", "the hiring manager",
               "the system design round", "my notice period", "the startup's runway",
               "a referral", "salary negotiation", "the take-home exercise", "team culture"]),
    "running": ("marathon training", ["the long run", "tempo intervals", "my heart-rate zones",
                "the taper week", "carb loading", "a shin splint", "the race-day pacing plan",
                "recovery runs", "new running shoes", "hill repeats"]),
    "cooking": ("sourdough and cooking", ["the starter", "hydration at 75 percent",
                "the bulk ferment", "a Dutch oven", "the crumb", "shaping the boule",
                "a miso glaze", "weeknight ramen", "cold retard overnight", "rye flour"]),
    "moving": ("moving to San Francisco", ["the lease in the Mission", "movers' quotes",
               "the security deposit", "Muni passes", "the commute", "a storage unit",
               "utility setup", "the neighbourhood", "a parking permit", "rent in Noe Valley"]),
    "agents": ("AI agents and memory", ["episodic memory", "retrieval-augmented generation",
               "the context window", "tool calling", "vector embeddings", "summary rollups",
               "provenance tracking", "evaluation harnesses", "prompt caching", "agent planning"]),
    "finance": ("personal finance", ["the index fund", "a Roth IRA", "the emergency fund",
                "quarterly taxes", "the budget spreadsheet", "credit card points",
                "a high-yield savings account", "rebalancing", "the 401k match", "insurance"]),
    "travel": ("travel", ["the flight to Lisbon", "a rail pass", "the hostel booking",
               "travel insurance", "a day trip to Sintra", "the packing list", "jet lag",
               "the itinerary", "a visa appointment", "local street food"]),
}
NAMES = ["Sam", "Priya", "Marcus", "Elena", "Jonas", "Aiko", "Diego", "Fatima", "Noah", "Lena",
         "Omar", "Grace", "Tomasz", "Ines", "Ravi", "Chloe"]
PLACES = ["Oakland", "the Embarcadero", "Golden Gate Park", "Berlin", "Portland", "Seattle",
          "Lisbon", "the Presidio", "Austin", "Toronto"]
USER_TEMPLATES = [
    "Can you help me think through {a}? {name} suggested I look at {b} first.",
    "I'm stuck on {a} again. Last week I tried changing {b} but nothing improved.",
    "What's a sensible plan for {a} if I only have {n} hours this week?",
    "Quick question about {a}: does {b} matter more than I think?",
    "{name} and I disagreed about {a}. I think {b} is the real problem.",
    "I decided to go ahead with {a}. What should I watch out for around {b}?",
    "Compare {a} with {b} for someone in {place}.",
    "Remind me what we said about {a} — I want to write it down before Friday.",
]
ASSISTANT_TEMPLATES = [
    "The key thing with {a} is to keep {b} simple at first and measure after {n} days.",
    "I'd start by writing down what {a} needs to achieve, then check whether {b} gets in the way.",
    "A common mistake is to treat {a} and {b} as the same problem; they fail in different ways.",
    "If {name} has done this before, ask how {b} behaved after the first {n} weeks.",
    "For {a}, a budget of about {n} hours is realistic, with {b} taking roughly half of it.",
    "One option is to postpone {b} and focus on {a}; another is to do both in smaller steps.",
    "People in {place} often handle {a} by scheduling {b} early in the week.",
    "Track {a} in a simple log: date, what changed in {b}, and how it felt on a scale of 1 to {n}.",
    "The trade-off is speed versus safety: {a} moves faster, while {b} is easier to undo.",
    "As a next step, try {a} for {n} days and note whether {b} changes at all.",
    "You mentioned {name} earlier; their experience with {b} is worth a short call.",
    "Here is a rough order: clarify {a}, test {b}, then decide by the end of week {n}.",
]
TITLES = ["Planning {a}", "Questions about {a}", "{a} notes", "Help with {a}", "{a} vs {b}",
          "Deciding on {a}"]


class TextPool:
    """Pre-rendered sentences per topic: random.choices over a pool is far cheaper per byte
    than formatting every sentence."""

    def __init__(self, rng: random.Random, per_topic: int = 400):
        self.user: dict[str, list[str]] = {}
        self.assistant: dict[str, list[str]] = {}
        self.titles: dict[str, list[str]] = {}
        for key, (_label, things) in TOPICS.items():
            self.user[key] = [self._fill(rng, rng.choice(USER_TEMPLATES), things) for _ in range(per_topic)]
            self.assistant[key] = [self._fill(rng, rng.choice(ASSISTANT_TEMPLATES), things)
                                   for _ in range(per_topic * 2)]
            self.titles[key] = [self._fill(rng, rng.choice(TITLES), things).capitalize()
                                for _ in range(50)]

    @staticmethod
    def _fill(rng: random.Random, template: str, things: list[str]) -> str:
        a, b = rng.sample(things, 2)
        return template.format(a=a, b=b, name=rng.choice(NAMES), place=rng.choice(PLACES),
                               n=rng.randint(2, 12))


def _turns(rng: random.Random, pool: TextPool, topic: str) -> list[tuple[str, str]]:
    n_pairs = min(15, max(1, int(rng.lognormvariate(1.3, 0.6))))
    turns = []
    for _ in range(n_pairs):
        user = " ".join(rng.choices(pool.user[topic], k=rng.randint(1, 4)))
        paragraphs = [" ".join(rng.choices(pool.assistant[topic], k=rng.randint(2, 6)))
                      for _ in range(rng.randint(1, 5))]
        turns.append((user, "\n\n".join(paragraphs)))
    return turns


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _chatgpt_conversation(rng: random.Random, pool: TextPool, topic: str, start: float) -> dict:
    turns = _turns(rng, pool, topic)
    conv_id = _uid(rng)
    root, system = "client-created-root", _uid(rng)
    mapping = {
        root: {"id": root, "message": None, "parent": None, "children": [system]},
        system: {"id": system, "parent": root, "children": [], "message": {
            "id": system, "author": {"role": "system", "name": None, "metadata": {}},
            "create_time": None, "update_time": None,
            "content": {"content_type": "text", "parts": [""]}, "status": "finished_successfully",
            "end_turn": True, "weight": 0.0, "recipient": "all", "channel": None,
            "metadata": {"is_visually_hidden_from_conversation": True}}},
    }
    parent, t = system, start
    for user_text, answer in turns:
        user_id, answer_id = _uid(rng), _uid(rng)
        mapping[parent]["children"].append(user_id)
        mapping[user_id] = _node(user_id, parent, "user", user_text, t)
        t += rng.uniform(5, 90)
        mapping[user_id]["children"].append(answer_id)
        if rng.random() < 0.05:  # regenerated answer: the first one stays as an alternate branch
            alt_id = _uid(rng)
            mapping[user_id]["children"].insert(0, alt_id)
            mapping[alt_id] = _node(alt_id, user_id, "assistant", answer[: len(answer) // 2], t - 2)
        mapping[answer_id] = _node(answer_id, user_id, "assistant", answer, t)
        parent, t = answer_id, t + rng.uniform(30, 900)
    return {"title": rng.choice(pool.titles[topic]), "create_time": start, "update_time": t,
            "mapping": mapping, "moderation_results": [], "current_node": parent,
            "plugin_ids": None, "conversation_id": conv_id, "conversation_template_id": None,
            "gizmo_id": None, "is_archived": False, "safe_urls": [],
            "default_model_slug": "gpt-4o", "id": conv_id}


def _node(node_id: str, parent: str, role: str, text: str, t: float) -> dict:
    message = {
        "id": node_id, "author": {"role": role, "name": None, "metadata": {}},
        "create_time": round(t, 6), "update_time": None,
        "content": {"content_type": "text", "parts": [text]}, "status": "finished_successfully",
        "end_turn": True if role == "assistant" else None, "weight": 1.0,
        "metadata": {"model_slug": "gpt-4o"} if role == "assistant" else {},
        "recipient": "all", "channel": None}
    return {"id": node_id, "message": message, "parent": parent, "children": []}


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _claude_conversation(rng: random.Random, pool: TextPool, topic: str, start: float) -> dict:
    messages, t = [], start
    for user_text, answer in _turns(rng, pool, topic):
        for sender, text in (("human", user_text), ("assistant", answer)):
            stamp = _iso(t)
            messages.append({
                "uuid": _uid(rng), "text": text, "sender": sender,
                "content": [{"start_timestamp": stamp, "stop_timestamp": stamp, "type": "text",
                             "text": text, "citations": []}],
                "created_at": stamp, "updated_at": stamp, "attachments": [], "files": []})
            t += rng.uniform(5, 600)
    return {"uuid": _uid(rng), "name": rng.choice(pool.titles[topic]), "summary": "",
            "created_at": _iso(start), "updated_at": _iso(t),
            "account": {"uuid": "00000000-0000-4000-8000-00000000a11c"}, "chat_messages": messages}


def generate(n_conversations: int, months: int, seed: int, fmt: str = "chatgpt",
             out_path: str | Path = "conversations.json", target_bytes: int | None = None,
             start: datetime = datetime(2024, 1, 1, tzinfo=timezone.utc)) -> dict:
    """Write a synthetic export; return {"path", "conversations", "bytes"}.

    With `target_bytes`, keep adding conversations until the file reaches that size
    (`n_conversations` is then only the initial estimate of how to spread them over time)."""
    if fmt not in ("chatgpt", "claude"):
        raise ValueError("fmt must be 'chatgpt' or 'claude'")
    rng = random.Random(seed)
    pool = TextPool(rng)
    make = _chatgpt_conversation if fmt == "chatgpt" else _claude_conversation
    span = months * 30.44 * 86400
    t0 = start.timestamp()
    topics = list(TOPICS)
    encoder = json.JSONEncoder()  # default ", " / ": " separators and \u escapes, like the real files
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    written, count = 0, 0
    with open(out_path, "w", encoding="utf-8", newline="") as out:
        out.write("[")
        written += 1
        while True:
            if target_bytes is None and count >= n_conversations:
                break
            if target_bytes is not None and written >= target_bytes:
                break
            if target_bytes is not None and count == 20:
                # Re-estimate how many conversations the target needs, so dates spread evenly.
                n_conversations = max(n_conversations, int(target_bytes / (written / count)))
            frac = min(count / max(n_conversations, 1), 1.0)
            when = t0 + frac * span + rng.uniform(0, 3600)
            chunk = encoder.encode(make(rng, pool, rng.choice(topics), when))
            if count:
                out.write(", ")
                written += 2
            out.write(chunk)
            written += len(chunk)  # ASCII-only output, so characters == bytes
            count += 1
        out.write("]")
    return {"path": str(out_path), "conversations": count, "bytes": out_path.stat().st_size}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="number of conversations")
    parser.add_argument("--months", type=int, default=24, help="months the conversations span")
    parser.add_argument("--format", choices=["chatgpt", "claude"], default="chatgpt")
    parser.add_argument("--out", required=True, help="output conversations.json path")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--target-mb", type=float, default=None,
                        help="write until the file is this many MB (overrides --n)")
    args = parser.parse_args(argv)
    target = int(args.target_mb * 1024 * 1024) if args.target_mb else None
    result = generate(args.n, args.months, args.seed, args.format, args.out, target)
    print(f"wrote {result['conversations']} conversations, {result['bytes'] / 1e6:.1f} MB "
          f"to {result['path']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
