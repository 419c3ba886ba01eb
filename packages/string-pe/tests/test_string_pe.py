from string_pe.registry import METHOD


def test_registered_name():
    assert METHOD.name == "string-pe"
