"""Thai dialects (Limkonchotiwat et al., arXiv 2504.05898): QA, summarisation and translation in Central Thai,
Isan, Lanna and Southern Thai.

- ``generation``: the paper's prompts and the resumable generation runs, scores and ΔDiff in the summary.
- ``metrics``: BLEU and ROUGE-L on Thai word tokens exactly as the paper's code, sacrebleu BLEU / chrF, ΔDiff,
  word overlap.
- ``tokenizers``: the word tokenizers BLEU and ROUGE-L may use (newmm with whitespace kept: the paper's).
- ``human_eval``: annotations, preferences, Generation/Fluency, Cohen's kappa, judge-vs-human Spearman.
- ``data``: the dialect loader and the one-off pickle converter.
"""

from thai_eval_utils.dialect.data import (
    DIALECTS,
    convert_dialect_pickle,
    dialect_tasks,
    load_dialect,
)
from thai_eval_utils.dialect.generation import (
    example_outputs,
    run_generation,
    score_generations,
    select_items,
)

__all__ = [
    "DIALECTS",
    "convert_dialect_pickle",
    "dialect_tasks",
    "example_outputs",
    "load_dialect",
    "run_generation",
    "score_generations",
    "select_items",
]
