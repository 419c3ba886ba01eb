from pipa.registry import METHOD


def test_registered_name():
    assert METHOD.name == "pipa"
