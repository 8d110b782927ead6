"""docs/system-files.md's reference of the models is what the catalog says: the section between
its markers is ``titop-fmu models --markdown``, regenerated and compared. After a change of the
catalog: ``python tests/docs/test_model_reference.py`` rewrites the section."""

import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "system-files.md"
BEGIN, END = "<!-- BEGIN titop-fmu models --markdown -->\n", "<!-- END titop-fmu models --markdown -->\n"


def section(text: str) -> str:
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


def spliced(text: str, generated: str) -> str:
    """``text`` with its generated section replaced by ``generated``."""
    return text[:text.index(BEGIN) + len(BEGIN)] + "\n" + generated.strip("\n") + "\n\n" + text[text.index(END):]


def test_the_page_is_the_catalog():
    from titop_fmu.models import markdown
    assert section(PAGE.read_text(encoding="utf-8")) == "\n" + markdown().strip("\n") + "\n\n", \
        "docs/system-files.md is not the catalog's: python tests/docs/test_model_reference.py rewrites it"


def test_the_reference_has_every_kind_port_and_parameter_with_its_default():
    """Read back from the Markdown, independently of the generator: every kind, every port,
    every parameter with its default (or 'required' for the physical data) and its unit."""
    from titop_fmu.fmu import catalog
    from titop_fmu.models import markdown
    text = markdown()
    for name, kind in catalog.KINDS.items():
        heading = f"### `{name}_c<n>`" if kind.has_children else f"### `{name}`"
        assert heading in text, heading
        part = text.split(heading, 1)[1].split("\n### ", 1)[0]
        rows = {m.group(1): m.group(2).split(" | ") for m in re.finditer(r"^\| `([^`]+)` \| (.*) \|$", part, re.M)}
        iface = catalog.interface(name, 1)
        for port in {n.split("[")[0] for n in iface.input_names + iface.output_names}:
            assert port.replace("c1.", "c<i>.") in rows, (name, port)
        for p in iface.params:
            default, unit = rows[p.name.replace("c1.", "c<i>.")][:2]
            if p.stated:
                assert default == "**required**", (name, p.name)
            else:
                shown = default.strip("`").replace(" * identity", "")
                value = np.asarray(p.default, dtype=float)
                assert np.allclose(value, float(shown) * np.eye(len(value)) if value.ndim == 2
                                   else np.array(eval(shown), dtype=float)), (name, p.name, default)
            if isinstance(p.unit, str) and p.unit != "1":
                assert unit == p.unit, (name, p.name, unit)
    required = re.findall(r"^\| `([^`]+)` \| input, required \|", text, re.M)
    assert set(required) == {"p.m", "c<i>.w", "l.m", "r.m"}


def test_models_markdown_prints_the_reference(capsys):
    from titop_fmu.cli import main
    from titop_fmu.models import markdown
    assert main(["models", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown() + "\n"
    assert main(["models", "--markdown", "revolute_c1"]) == 2
    assert "give no NAME" in capsys.readouterr().err


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    from titop_fmu.models import markdown
    PAGE.write_text(spliced(PAGE.read_text(encoding="utf-8"), markdown()), encoding="utf-8")
    print(f"rewrote the models section of {PAGE.relative_to(ROOT)}")
