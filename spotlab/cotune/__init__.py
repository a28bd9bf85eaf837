"""CoTune: configuration knowledge for fine-tuning jobs (SPEC §8)."""
