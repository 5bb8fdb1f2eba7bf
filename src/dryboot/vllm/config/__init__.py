"""``vllm/config/``: a model's ``config.json`` read as the Hugging Face config classes read it
(:mod:`.hf`), and the engine configuration resolved once from the flags (:mod:`.resolve`)."""
