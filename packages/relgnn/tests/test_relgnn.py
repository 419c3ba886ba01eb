from relgnn.registry import METHOD


def test_registered_name():
    assert METHOD.name == "relgnn"
