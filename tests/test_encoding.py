"""lm-eval's pair encoding has one public home: ``backend.encoding``, used by the local engine and by
served models alike (the rules themselves are checked in tests/test_scoring.py::test_encoding_follows_lm_eval)."""

from thai_eval_utils.backend import encoding, loglikelihood
from thai_eval_utils.backend.served import completions


def test_trailing_whitespace_moves_to_the_continuation():
    assert encoding.move_trailing_space("Question: What is \n ", "Bangkok") == ("Question: What is", " \n Bangkok")
    assert encoding.move_trailing_space("สวัสดี", "ครับ") == ("สวัสดี", "ครับ")
    assert completions.text_prompts([("ถาม: ", "ตอบ")])[0].boundary == len("ถาม:")


def test_one_pair_and_many_pairs_encode_alike(tiny_tokenizer):
    reqs = [("Question: What is ", "Bangkok"), ("สวัสดีค", "รับ"), ("", " Bangkok")]
    for bos in (False, True):
        assert [
            encoding.encode_pair(tiny_tokenizer, c, x, add_bos_token=bos) for c, x in reqs
        ] == encoding.encode_pairs(tiny_tokenizer, reqs, bos)


def test_the_local_engine_and_served_models_share_it(tiny_tokenizer):
    assert loglikelihood.encode_pairs is completions.encode_pairs is encoding.encode_pairs
    assert loglikelihood.fed_tokens is completions.fed_tokens is encoding.fed_tokens
    reqs = [("Question: What is ", "Bangkok"), ("สวัสดี", "ครับ")]
    seqs, targets = encoding.fed_tokens(encoding.encode_pairs(tiny_tokenizer, reqs), 1024)
    prompts = completions.token_prompts(tiny_tokenizer, reqs, add_bos_token=False, max_length=1024)
    assert [p.ids for p in prompts] == [s + (t[-1],) for s, t in zip(seqs, targets)]
