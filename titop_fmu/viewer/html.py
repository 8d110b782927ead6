"""One self-contained HTML file: the page (``template.html``), the renderer (``viewer.js``)
and the scene's JSON inlined, nothing fetched (its Content-Security-Policy forbids any
request), so that it opens offline in any browser."""

from __future__ import annotations

import html
import json
import re
from importlib import resources


def _package_text(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def render(scene: dict) -> str:
    """The HTML page showing ``scene`` (:func:`.scene.scene`)."""
    data = json.dumps(scene, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    parts = {"TITLE": html.escape(scene["title"]), "SCRIPT": _package_text("viewer.js"), "SCENE": data}
    return re.sub(r"\{\{(TITLE|SCRIPT|SCENE)\}\}", lambda m: parts[m.group(1)], _package_text("template.html"))
