"""Mirrors ``vllm/transformers_utils/``: reading a checkpoint's Hugging Face config."""
