from dryboot.errors import InputError, missing_field, not_positive_integer


def test_refusal_wording_builders() -> None:
    assert missing_field() == "required field is missing"
    assert missing_field("vLLM's MiMo-V2 reads it") == "required field is missing (vLLM's MiMo-V2 reads it)"
    assert not_positive_integer(0) == "must be a positive integer, got 0"
    assert not_positive_integer("x", "kernel_block") == "kernel_block must be a positive integer, got 'x'"
    line = InputError("c.json", "vocab_size", missing_field("UltravoxModel: vLLM's model class reads it")).line()
    assert line == "c.json: vocab_size: required field is missing (UltravoxModel: vLLM's model class reads it)"
