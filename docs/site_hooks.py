"""mkdocs hook (``mkdocs.yml``): links from the documentation to files of the repository outside ``docs/`` (the
recordings and tests the fidelity matrix cites) work in a checkout and on a code host, but the site has no copy of
those files. Each such link is checked to point at a file or folder that exists (a broken one fails the strict
build) and is shown on the site as its repository path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

#: a Markdown link whose target climbs out of the page's folder: [text](../x/y.json#anchor) (the text may hold a
#: bracketed glob such as ``[!s]*.json``)
_LINK = re.compile(r"\[(?P<text>(?:[^\[\]]|\[[^\]]*\])*)\]\((?P<target>(?:\.\./)+[^)#\s]*)(?P<anchor>#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    folder = (docs / page.file.src_path).parent

    def outside(match: re.Match[str]) -> str:
        target = (folder / match["target"]).resolve()
        if target.is_relative_to(docs):
            return match[0]  # a page of the site: mkdocs checks it
        if not target.is_relative_to(root) or not target.exists():
            raise PluginError(f"{page.file.src_path}: the link {match['target']!r} points at nothing in the repository")
        path = target.relative_to(root).as_posix() + ("/" if target.is_dir() else "")
        text = match["text"]
        if text.strip("`").startswith(path) or text.strip("`").endswith(Path(path).name):
            return f"`{text.strip('`')}`" if "tests/" in text or "/" in text else f"`{path}`"
        return f"{text} (`{path}`)"

    return _LINK.sub(outside, markdown)
