"""Icons come from Streamlit's Material set (``:material/name:``), never emoji: emoji render as empty boxes
where the fonts are missing (a locked-down office machine), Material icons ship with Streamlit."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EMOJI = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u21B6\u21B7\u25B6\u25C0\uFE0F]")
FILES = sorted(ROOT.glob("kanon_app/*.py")) + sorted(ROOT.glob("pages/*.py")) + [ROOT / "app.py"]


def test_no_emoji_icons_in_the_dashboard():
    found = []
    for path in FILES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if EMOJI.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, found


def test_material_icons_are_well_formed():
    names = set()
    for path in FILES:
        names.update(re.findall(r":material/([^:\s]*):", path.read_text(encoding="utf-8")))
    assert names  # the dashboard uses them
    assert all(re.fullmatch(r"[a-z0-9_]+", n) for n in names), names
