"""Models behind OpenAI-compatible servers (vLLM, SGLang, llama-cpp-python): Thai-H6 log-likelihoods and raw
completions through ``/v1/completions``, over one server or several replicas (spec ``completions:<model-id>``)."""

from thai_eval_utils.backend.served.completions import TEXT_BOUNDARY_RULE
from thai_eval_utils.backend.served.model import SPEC_PREFIX, ServedModel
from thai_eval_utils.backend.served.replicas import MalformedReply, Pool, split_base_urls

__all__ = ["SPEC_PREFIX", "TEXT_BOUNDARY_RULE", "MalformedReply", "Pool", "ServedModel", "split_base_urls"]
