"""Shared fixtures: tiny random causal LMs with a small Thai BPE tokenizer (fast unit tests).

The embedded Gemma 3 270M is used only by a few integration tests; everything else runs on these
models, built in a second from a fixed seed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fake_hf_hub import FakeHub

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]

# A few sentences of Thai and English to train the tiny tokenizer on (written for these tests).
TRAINING_TEXT = [
    "สวัสดีครับ วันนี้อากาศดีมาก เราจะไปตลาดกันไหม",
    "กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย มีประชากรมากกว่าสิบล้านคน",
    "คำถาม: น้ำเดือดที่อุณหภูมิเท่าไร\nคำตอบ: หนึ่งร้อยองศาเซลเซียส",
    "Question: What is the capital of Thailand?\nAnswer: Bangkok",
    "แม่ซื้อส้มมาสามผล แล้วแบ่งให้ลูกหนึ่งผล เหลือส้มกี่ผล #### 2",
    "เด็กนักเรียนอ่านหนังสือในห้องสมุดทุกวันหลังเลิกเรียน",
    "The quick brown fox jumps over the lazy dog. 1234567890",
    "ข้าวเหนียวมะม่วงเป็นของหวานที่คนไทยชอบกินในหน้าร้อน",
    "บ่เป็นหยัง เฮาสิไปนำกัน แม่นบ่",
    "กิ๋นข้าวแล้วกา เจ้า ไปแอ่วกาดกั๋น",
]


def _train_tiny_tokenizer(out_dir: Path):
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=["<pad>", "<eos>", "<bos>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator(TRAINING_TEXT * 3, trainer=trainer)
    bos = tk.token_to_id("<bos>")
    # Like Gemma: BOS is added when add_special_tokens=True.
    tk.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", bos)]
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>"
    )
    tok.save_pretrained(out_dir)
    return tok


@pytest.fixture(scope="session")
def tiny_tokenizer(tmp_path_factory):
    """A 600-token byte-level BPE tokenizer trained on Thai and English, adding <bos> like Gemma."""
    return _train_tiny_tokenizer(tmp_path_factory.mktemp("tiny_tok"))


def _tiny_llama(tok):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    return LlamaForCausalLM(cfg).eval()


def _tiny_gemma3(tok):
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    cfg = Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        query_pre_attn_scalar=16,
        sliding_window=6,
        layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention"],
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    return Gemma3ForCausalLM(cfg).eval()


@pytest.fixture(scope="session")
def tiny_llama(tiny_tokenizer):
    """(model, tokenizer): a random 2-layer Llama-style causal LM in float32."""
    return _tiny_llama(tiny_tokenizer), tiny_tokenizer


@pytest.fixture(scope="session")
def tiny_gemma3(tiny_tokenizer):
    """(model, tokenizer): a random 4-layer Gemma 3 text model, sliding window 6 mixed with full attention."""
    return _tiny_gemma3(tiny_tokenizer), tiny_tokenizer


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_llama, tmp_path_factory) -> Path:
    """The tiny Llama saved as a local Hugging Face model directory (for load_model tests)."""
    model, tok = tiny_llama
    out = tmp_path_factory.mktemp("tiny_llama_dir")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_local_model(tiny_llama):
    """The tiny Llama wrapped as a thai_eval_utils LocalModel (loglikelihood, generate, chat)."""
    from thai_eval_utils.backend.models import GEMMA3_CHAT_TEMPLATE, LocalModel

    model, tok = tiny_llama
    if not tok.chat_template:
        tok.chat_template = GEMMA3_CHAT_TEMPLATE
    return LocalModel(model, tok, name="tiny-llama", identity={"name": "tiny-llama", "source": "random seed 0"})


@pytest.fixture
def fake_hub(tmp_path: Path) -> Iterator[FakeHub]:
    """A started :class:`fake_hf_hub.FakeHub` that huggingface_hub (here, and subprocesses through the environment)
    uses for the test, with its own ``HF_HOME`` (``hub.hf_home``, ``tmp_path / "hf_home"``)."""
    from fake_hf_hub import FakeHub, hub_client_at  # only the tests that use the hub pay for its imports

    with FakeHub() as hub:
        hub.hf_home = tmp_path / "hf_home"
        with hub_client_at(hub.endpoint, hub.hf_home):
            yield hub
