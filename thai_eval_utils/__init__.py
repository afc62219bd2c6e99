"""thai-eval: evaluate large language models in Thai (Thai-H6, ThaiCLI, Thai dialects)."""

__version__ = "0.1.0"
