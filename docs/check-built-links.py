#!/usr/bin/env python3
"""Check the links of the HTML book that `mdbook build docs` wrote (default target/book/).

Every relative href and src must name a file of the built book, and every #fragment an id in
that file. No network: external links are not fetched. The Markdown sources are checked the
same way by `cargo test` (crates/railyard/tests/it/book_links.rs); this catches what mdBook's
own rewriting could break. Exit 1 with one line per broken link.
"""
import html.parser
import pathlib
import sys
import urllib.parse


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids = set()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            if (name == "href" and tag == "a") or (name == "src" and tag == "img"):
                self.links.append((self.getpos()[0], value))


def main(root):
    root = pathlib.Path(root)
    pages = {}
    for path in sorted(root.rglob("*.html")):
        parser = Page()
        parser.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = parser
    if not pages:
        print(f"{root}: no HTML pages: run `mdbook build docs` first", file=sys.stderr)
        return 1
    problems = []
    checked = 0
    for path, page in pages.items():
        for line, link in page.links:
            parts = urllib.parse.urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith("javascript:"):
                continue
            target = (path.parent / urllib.parse.unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            where = f"{path.relative_to(root.resolve())}:{line}: {link}"
            if not target.exists():
                problems.append(f"{where}: no file {target}")
            elif parts.fragment and target in pages and parts.fragment not in pages[target].ids:
                problems.append(f"{where}: no id #{parts.fragment}")
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"book links: {checked} checked in {len(pages)} pages, {len(problems)} broken")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "target/book"))
