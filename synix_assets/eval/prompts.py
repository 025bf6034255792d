"""The QA prompts: one answer prompt (ours) and the judges of the published protocols.

Judges, verbatim in substance:
- LoCoMo: the LLM-as-a-judge prompt Mem0 published with its LoCoMo numbers (the "J" score that
  Mem0, Zep and later LoCoMo reports use): generous CORRECT/WRONG, a JSON `label`.
- LongMemEval: `src/evaluation/evaluate_qa.py` (`get_anscheck_prompt`), one template per
  question type plus the abstention one; correct iff the reply contains "yes".
"""
from __future__ import annotations

ANSWER_SYSTEM = ("You answer questions about a person's past conversations using only the memory "
                 "excerpts given. Be brief.")

ANSWER_PROMPT = """Memory excerpts (most relevant first; dates are when each conversation happened):

{memory}

{context}Question: {question}
{asked}
Answer in at most one short sentence. If the memory does not contain the answer, say "not mentioned"."""

LOCOMO_JUDGE_SYSTEM = "You are an expert grader that determines if answers to questions match a gold standard answer"

LOCOMO_JUDGE = """Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold}
Generated answer: {answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label"."""

_LME_BASE = ("I will give you a question, a correct answer, and a response from a model. Please answer yes "
             "if the response contains the correct answer. Otherwise, answer no. If the response is equivalent "
             "to the correct answer or contains all the intermediate steps to get the correct answer, you should "
             "also answer yes. If the response only contains a subset of the information required by the "
             "answer, answer no.")
_LME_TAIL = "\n\nQuestion: {question}\n\nCorrect Answer: {gold}\n\nModel Response: {answer}\n\nIs the model response correct? Answer yes or no only."

LONGMEMEVAL_JUDGE = {
    "single-session-user": _LME_BASE + " " + _LME_TAIL,
    "single-session-assistant": _LME_BASE + " " + _LME_TAIL,
    "multi-session": _LME_BASE + " " + _LME_TAIL,
    "temporal-reasoning": _LME_BASE + " In addition, do not penalize off-by-one errors for the number of days. "
    "If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors "
    "(e.g., predicting 19 days when the answer is 18), the model's response is still correct. " + _LME_TAIL,
    "knowledge-update": "I will give you a question, a correct answer, and a response from a model. Please answer "
    "yes if the response contains the correct answer. Otherwise, answer no. If the response contains some "
    "previous information along with an updated answer, the response should be considered as correct as long "
    "as the updated answer is the required answer." + _LME_TAIL,
    "single-session-preference": "I will give you a question, a rubric for desired personalized response, and a "
    "response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer "
    "no. The model does not need to reflect all the points in the rubric. The response is correct as long as it "
    "recalls and utilizes the user's personal information correctly.\n\nQuestion: {question}\n\nRubric: {gold}"
    "\n\nModel Response: {answer}\n\nIs the model response correct? Answer yes or no only.",
}

LONGMEMEVAL_ABSTENTION_JUDGE = (
    "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes "
    "if the model correctly identifies the question as unanswerable. The model could say that the information "
    "is incomplete, or some other information is given but the asked information is not.\n\nQuestion: "
    "{question}\n\nExplanation: {gold}\n\nModel Response: {answer}\n\nDoes the model correctly identify the "
    "question as unanswerable? Answer yes or no only.")
