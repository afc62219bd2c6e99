"""A Thai multiple-choice task scored by log-likelihood, as lm-evaluation-harness scores one
(docs/adding_a_task.md). thai-eval finds it with --tasks-dir (or $THAI_EVAL_TASKS)."""

from thai_eval_utils.tasks import MultipleChoiceTask

TASK = MultipleChoiceTask(
    name="thai_facts",                       # --benchmarks thai_facts
    data="thai_facts.jsonl",                 # beside this file: one JSON object per line
    prompt="คำถาม: {question}\nคำตอบ:",       # {field}: that field of each row
    choices="choices",                       # a field holding the list of answer texts
    gold="answer",                           # the gold answer: its index, or its text
    target_delimiter=" ",                    # lm-eval's: the model scores " " + each answer
    metrics=("acc", "acc_norm"),             # acc_norm: log-likelihood per character of the answer
    title="Thai facts (an example task)",
    version="1",
)
