"""spotlab: deadline-aware scheduling of LLM fine-tuning on spot and on-demand GPUs."""

__version__ = "0.1.0"
