"""The committed sample report links only images that are committed beside it."""

import re
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def test_every_image_a_committed_report_links_exists() -> None:
    reports = sorted(SAMPLES.rglob("*.md"))
    assert reports
    for report in reports:
        links = re.findall(r"!\[.*?\]\(([^)\s]+)\)", report.read_text(encoding="utf-8"))
        assert links, report
        missing = [link for link in links if not (report.parent / link).is_file()]
        assert not missing, f"{report} links missing images: {missing}"
