"""verify: staged verification of LLM answers."""
