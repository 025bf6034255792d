"""Tiny LoCoMo- and LongMemEval-shaped data whose answers are known (shared by the eval tests)."""
from __future__ import annotations


def _turns(n: int, *lines: tuple[str, str]) -> list[dict]:
    return [{"speaker": who, "dia_id": f"D{n}:{i + 1}", "text": text} for i, (who, text) in enumerate(lines)]


LOCOMO_TINY = {
    "sample_id": "conv-t",
    "conversation": {
        "speaker_a": "Alice", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 January, 2023",
        "session_1": _turns(1, ("Alice", "I adopted a puppy named Biscuit last week."),
                            ("Bob", "Congrats! I started taking cello lessons."),
                            ("Alice", "My sister moved to Lisbon for a robotics job."),
                            ("Bob", "I keep reading novels about volcanoes.")),
        "session_2_date_time": "10:00 am on 20 March, 2023",
        "session_2": _turns(2, ("Bob", "I performed my first cello recital on Saturday."),
                            ("Alice", "I signed up for a pottery class downtown."),
                            ("Bob", "Next month I am flying to Iceland to hike glaciers."),
                            ("Alice", "Biscuit chewed my favourite boot again.")),
        "session_3_date_time": "9:00 am on 2 May, 2023",
        "session_3": _turns(3, ("Alice", "I sold six pottery bowls at the farmers market."),
                            ("Bob", "I adopted a green parrot called Kiwi."),
                            ("Alice", "My sister flew back from Lisbon to visit."),
                            ("Bob", "I am training for the Boston marathon.")),
        "session_4_date_time": "9:00 am on 1 July, 2023",  # a date without a session (as conv-26)
    },
    "qa": [
        {"question": "What is the name of Alice's puppy?", "answer": "Biscuit", "evidence": ["D1:1"], "category": 4},
        {"question": "What instrument does Bob play at his recital?", "answer": "cello",
         "evidence": ["D2:1", "D1:2"], "category": 1},
        {"question": "When did Alice sell pottery bowls?", "answer": "May 2023", "evidence": ["D3:01"], "category": 2},
        {"question": "What kind of bird did Bob adopt?", "answer": "a parrot", "evidence": ["D3:2"], "category": 4},
        {"question": "Where does Alice's sister live?", "answer": "Lisbon", "evidence": ["D1:3; D3:3"], "category": 1},
        {"question": "Would Bob enjoy cold places?", "answer": "Likely yes", "evidence": [], "category": 3},
        {"question": "What did Bob adopt?", "adversarial_answer": "a puppy", "evidence": ["D1:1"], "category": 5},
    ],
}


def _lme_session(*turns: tuple[str, str, bool]) -> list[dict]:
    out = []
    for role, content, gold in turns:
        t = {"role": role, "content": content}
        if gold:
            t["has_answer"] = True
        out.append(t)
    return out


def _lme_instance(qid: str, question: str, answer: str, qtype: str, sessions: dict, dates: dict,
                  gold: list[str], order: list[str]) -> dict:
    return {"question_id": qid, "question_type": qtype, "question": question, "answer": answer,
            "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": order,
            "haystack_dates": [dates[s] for s in order], "haystack_sessions": [sessions[s] for s in order],
            "answer_session_ids": gold}


LME_SESSIONS = {
    "answer_aa01": _lme_session(("user", "I just bought a blue kayak for weekend trips on the lake.", True),
                                ("assistant", "Nice! Kayaking is great exercise.", False)),
    "answer_aa02": _lme_session(("user", "Update: I sold the blue kayak and bought a red canoe instead.", True),
                                ("assistant", "A canoe fits more gear.", False)),
    "sharegpt_f1": _lme_session(("user", "Can you explain how photosynthesis works in plants?", False),
                                ("assistant", "Plants turn light, water and carbon dioxide into sugar.", False)),
    "ultrachat_f2": _lme_session(("user", "Give me a recipe for lentil soup with cumin.", False),
                                 ("assistant", "Simmer lentils with onion, cumin and stock.", False)),
    "answer_bb01": _lme_session(("user", "My daughter Maya starts violin lessons on Tuesday.", True),
                                ("assistant", "How exciting for Maya!", False)),
}
LME_DATES = {"answer_aa01": "2023/01/10 (Tue) 09:00", "answer_aa02": "2023/04/02 (Sun) 18:30",
             "sharegpt_f1": "2023/02/14 (Tue) 12:00", "ultrachat_f2": "2023/03/03 (Fri) 08:15",
             "answer_bb01": "2023/05/05 (Fri) 19:45"}


def longmemeval_items(shape: str) -> list[dict]:
    """Three questions (one abstention) in the `_s`/`_m` (sorted haystack with fillers) or
    `oracle` (evidence sessions only, unsorted) shape."""
    by_date = sorted(LME_SESSIONS, key=lambda s: LME_DATES[s])
    def hay(gold):
        return list(reversed(gold)) if shape == "oracle" else by_date
    items = [
        _lme_instance("q-boat", "Which kayak or canoe do I own now?", "a red canoe", "knowledge-update",
                      LME_SESSIONS, LME_DATES, ["answer_aa01", "answer_aa02"],
                      hay(["answer_aa01", "answer_aa02"])),
        _lme_instance("q-violin", "Which instrument is my daughter Maya learning?", "violin",
                      "single-session-user", LME_SESSIONS, LME_DATES, ["answer_bb01"], hay(["answer_bb01"])),
        _lme_instance("q-drums_abs", "When did I start drum lessons?", "You never mentioned drum lessons.",
                      "single-session-user", LME_SESSIONS, LME_DATES, [], hay(["answer_bb01"])),
    ]
    return items
