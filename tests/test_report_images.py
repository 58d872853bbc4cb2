"""Every image a report links exists: the committed Markdown (README, samples/, docs/ and the
studies under docs/results/) and a bench report written afresh."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MARKDOWN_IMAGE = re.compile(r"!\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
"""`![alt](target "title")`; the alt text may hold brackets, as in 'MSE (pixel values in [0, 1])'."""
HTML_IMAGE = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]+)\"", re.IGNORECASE)


def committed_markdown() -> list[Path]:
    """README.md and every Markdown file under samples/ and docs/ (docs/results/ included)."""
    files = [ROOT / "README.md"]
    for folder in ("samples", "docs"):
        files += sorted(path for path in (ROOT / folder).rglob("*.md") if ".venv" not in path.parts)
    return files


def linked_images(markdown: Path) -> list[str]:
    """The local image targets of a Markdown file (`![..](path)` and `<img src>`), web and data URIs left out."""
    text = markdown.read_text(encoding="utf-8")
    links = MARKDOWN_IMAGE.findall(text) + HTML_IMAGE.findall(text)
    return [unquote(link.split("#")[0]) for link in links if not re.match(r"^(https?:|data:|//)", link)]


def missing_images(markdown: Path) -> list[str]:
    return [link for link in linked_images(markdown) if not (markdown.parent / link).is_file()]


def test_the_link_pattern_finds_every_image_form(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "a b.png").write_bytes(PNG_MAGIC)
    page.write_text('![a [0, 1]](plots/a%20b.png) ![t](plots/gone.png "title") <img alt="x" src="sheets/s.png">\n'
                    "![web](https://example.org/x.png) [not an image](plots/other.png)\n", encoding="utf-8")
    assert linked_images(page) == ["plots/a b.png", "plots/gone.png", "sheets/s.png"]
    assert missing_images(page) == ["plots/gone.png", "sheets/s.png"]


@pytest.mark.parametrize("markdown", committed_markdown(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_image_a_committed_page_links_exists(markdown: Path) -> None:
    assert missing_images(markdown) == [], f"{markdown.relative_to(ROOT)} links images that are not committed"


@pytest.mark.slow  # trains and evaluates one tiny model (about 10 s on 2 cores)
def test_a_fresh_bench_report_links_only_images_it_wrote(tmp_path: Path) -> None:
    from vision_bench.bench import run_bench

    config = yaml.safe_load((ROOT / "configs" / "bench_smoke.yaml").read_text(encoding="utf-8"))
    config["models"] = config["models"][:1]
    result = run_bench(config, tmp_path / "bench", progress=False)
    links = linked_images(result.report_md)
    assert missing_images(result.report_md) == []
    assert {"plots/grid_accuracy_by_setting.png", "plots/mse_by_setting.png", "plots/training_curves.png"} <= set(links)
    assert sum(link.startswith("sheets/") for link in links) == 4  # test_id / test_ood, best / worst
    for link in links:
        path = result.out_dir / link
        assert path.resolve().is_relative_to(result.out_dir), link  # the report folder holds what it links
        assert path.read_bytes().startswith(PNG_MAGIC), link
