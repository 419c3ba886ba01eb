"""The README's Python quickstart runs as written (tiny sizes) and prints what it says."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_quickstart_runs(capsys):
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert blocks, "README.md has no ```python block"
    exec(compile(blocks[0], str(README), "exec"), {"__name__": "__readme__"})
    assert "gap" in capsys.readouterr().out
