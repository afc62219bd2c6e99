"""A Thai generation task scored against a reference: exact match and chrF (docs/adding_a_task.md)."""

from thai_eval_utils.tasks import GenerationTask

TASK = GenerationTask(
    name="thai_capitals",
    data="thai_capitals.jsonl",
    prompt="คำถาม: เมืองหลวงของ{country}คือเมืองใด\nคำตอบ:",  # a plain prompt: model.generate completes it
    reference="capital",                     # the field holding the reference answer
    metrics=("exact_match", "chrf"),         # also: rougeL (Thai words), bleu (sacrebleu on Thai words)
    max_new_tokens=16,
    stop=("\n",),                            # the output is cut before the first stop string
    temperature=0.0,                         # greedy
    title="Thai capitals (an example task)",
)
