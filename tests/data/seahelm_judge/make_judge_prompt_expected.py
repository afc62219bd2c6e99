"""Write the expected mt-bench-judge prompts of tests/test_seahelm_mt_bench.py from the spec's Appendix A.1 (the
YAML block quoted from SEA-HELM 6844e6c config.yaml:12-123), filled the way mtbench_judge_dataloader.py:14-82
fills them, so the test compares thai-eval's messages with text that did not come from thai-eval's code.

    python tests/data/seahelm_judge/make_judge_prompt_expected.py ../shared/spec/seahelm_thai.md
"""

import json
import sys
from pathlib import Path

import yaml

spec = Path(sys.argv[1]).read_text(encoding="utf-8")
block = spec[spec.index("### A.1 mt-bench-judge") : spec.index("### A.2")]
judge = yaml.safe_load(block[block.index("````yaml") + 8 : block.rindex("````")])["judge"]
row = json.loads(Path("data/seahelm/mt-bench-judge.jsonl").read_text(encoding="utf-8").splitlines()[1])
a1, a2 = "มีแอปเปิล 5 - 2 + 3 = 6 ผล {ไม่ใช่ฟิลด์} $x", "ได้คนละ 2 ผล ไม่เหลือ"
out = {"row_id": row["id"], "answers": [a1, a2], "system": judge["judge_prompts"]["system_prompt"], "user": {}}
for i, c in enumerate(row["criteria"]):
    t = c["turn"]
    if t == 0:
        transcript, response = "[User]\n" + row["prompts"][0]["text"], a1
    else:
        transcript = (
            "[User]\n"
            + row["prompts"][0]["text"]
            + "\n\n[Assistant (fixed)]\n"
            + a1
            + "\n\n[User]\n"
            + row["prompts"][1]["text"]
        )
        response = a2
    template = judge["judge_prompts"]["criteria_prompt"][f"turn_{t + 1}"]
    out["user"][f"{row['id']}_turn{t}_criteria{i}"] = template.format(
        transcript=transcript, response=response, keyPointText=c["criterion"].format(**row["prompts"][0])
    )
Path("tests/data/seahelm_judge/mt_bench_judge_expected.json").write_text(
    json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
)
