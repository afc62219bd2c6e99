"""Translation scoring (spec ``seahelm_thai.md`` 4.5): MetricX-24 as SEA-HELM runs it, only when the user gives the
MetricX model (never faked: without it the task has no MetricX score), and chrF++ beside it, labelled as ours
(SEA-HELM has chrF++ switched off for every translation task, ``use_chrf_metric: false``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thai_eval_utils.core.errors import ModelLoadError
from thai_eval_utils.seahelm.extract import extract_text
from thai_eval_utils.seahelm.metrics import normalize_score

#: The judge input (``nlg/translation/config.yaml:24-25``, verbatim).
METRICX_TEMPLATE = "source: {source} candidate: {pred} reference: {ref}"
#: SEA-HELM's judge batches and input length (``nlg/translation/config.yaml:19-25``, ``metricx_serving.py:49-60``;
#: its checkpoint ``google/metricx-24-hybrid-xxl-v2p6-bfloat16``, tokenizer ``google/mt5-xl``).
METRICX_BATCH, METRICX_MAX_LENGTH = 32, 1536
#: ``<extra_id_10>``: the logit MetricX reads as its score (``metricx_models.py:146-149``).
METRICX_TOKEN = 250089


def metricx_input(source: str, pred: str | None, ref: str) -> str:
    """One row's judge input, built before SEA-HELM replaces a failed generation by ``""``: a None prediction is
    printed as ``None`` (``translation_dataloader.py:110-137``)."""
    return METRICX_TEMPLATE.format(source=source, pred=pred, ref=ref)


def metricx_metrics(scores: Sequence[float]) -> tuple[dict[str, float], list[float]]:
    """TranslationMetric's MetricX numbers (``translation_metric.py:41-68``): the mean raw score (0-25, lower is
    better) and the mean of 100 x max((25 - s)/25, 0); per item the normalised value."""
    norm = [normalize_score(s, 25, 0) * 100 for s in scores]
    return {
        "metricx_wmt24_scores": sum(scores) / len(scores),
        "normalized_metricx_wmt24_scores": sum(norm) / len(norm),
    }, norm


def chrf_pp(predictions: Sequence[str], references: Sequence[str]) -> float:
    """chrF++ as SEA-HELM would compute it if switched on: sacrebleu ``CHRF(word_order=2).corpus_score``
    (``translation_metric.py:70-95``); ours: it is off in SEA-HELM."""
    from sacrebleu.metrics import CHRF

    return float(CHRF(word_order=2).corpus_score(list(predictions), [list(references)]).score)


def chrf_item(prediction: str, reference: str) -> float:
    """One sentence's chrF++ (for per-item views and the bootstrap interval; ours)."""
    from sacrebleu.metrics import CHRF

    return float(CHRF(word_order=2).sentence_score(prediction, [reference]).score)


def translation_metrics(
    labels: Sequence[str], replies: Sequence[str | None], answer_tag: str
) -> tuple[dict[str, Any], list[float], list[str]]:
    """The run's translation numbers without a MetricX model: ``null_count`` (SEA-HELM's) and ``chrf_pp_ours``
    (labelled ours); per item: sentence chrF++ (ours). MetricX, when given, is added by :class:`MetricX`."""
    preds = [extract_text(r, answer_tag) for r in replies]
    metrics = {"null_count": sum(p == "" for p in preds), "chrf_pp_ours": chrf_pp(preds, labels)}
    return metrics, [chrf_item(p, r) for p, r in zip(preds, labels, strict=True)], preds


@dataclass
class MetricX:
    """MetricX-24 as ``src/serving/offline/metricx_serving.py:49-129`` runs it: the slow mT5-XL tokenizer, batches
    of 32 rows in dataset order, ``truncation=True, max_length=1536, padding=True``, then the LAST column of the
    padded batch dropped from ``input_ids`` and ``attention_mask`` (meant to drop EOS; P8), one decoder step from
    token 0, score = logit 250089 clamped to [0, 25].

    ``model``: the MetricX checkpoint folder the user gives (recorded in the run card); ``tokenizer``: the mT5
    tokenizer folder (default: the same folder)."""

    model: str
    tokenizer: str | None = None
    batch_size: int = METRICX_BATCH
    device: str | None = None

    def identity(self) -> dict[str, Any]:
        return {
            "metricx_model": str(self.model),
            "metricx_tokenizer": str(self.tokenizer or self.model),
            "batch_size": self.batch_size,
            "max_length": METRICX_MAX_LENGTH,
        }

    def score(self, inputs: Sequence[str]) -> list[float]:
        """MetricX scores of the judge inputs (:func:`metricx_input`), in order."""
        import torch
        from transformers import AutoTokenizer, MT5ForConditionalGeneration

        if not Path(self.model).exists():
            raise ModelLoadError(f"MetricX model folder not found: {self.model} (nothing is downloaded at run time)")
        tok = AutoTokenizer.from_pretrained(self.tokenizer or self.model, use_fast=False)
        net = MT5ForConditionalGeneration.from_pretrained(self.model, torch_dtype="auto")
        if net.config.tie_word_embeddings:  # MT5ForRegression never rescales before lm_head; HF does when tied
            raise ModelLoadError("this checkpoint ties its embeddings; MetricX-24's regression head does not")
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        net.to(device).eval()
        out: list[float] = []
        for i in range(0, len(inputs), self.batch_size):
            batch = list(inputs[i : i + self.batch_size])
            enc = tok(batch, truncation=True, padding=True, max_length=METRICX_MAX_LENGTH, return_tensors="pt")
            ids, mask = enc["input_ids"][:, :-1].to(device), enc["attention_mask"][:, :-1].to(device)
            start = torch.zeros((ids.shape[0], 1), dtype=torch.long, device=device)
            with torch.no_grad():
                logits = net(input_ids=ids, attention_mask=mask, decoder_input_ids=start).logits
            out += torch.clamp(logits[:, 0, METRICX_TOKEN].float(), 0, 25).cpu().tolist()
        return out
