#!/usr/bin/env python3
"""Checks the guide (docs/src) and README.md: links, includes and Rust samples; run by .ci/run.

- A relative link must name a file that exists, and its `#anchor` a heading of that file (ids made
  as mdBook and GitHub make them). A page of the guide may link only inside docs/src, since the
  built book holds nothing else; README.md may link anywhere in the repository.
- `{{#include FILE}}` and `{{#include FILE:ANCHOR}}` must name an existing file and, with an
  anchor, a `// ANCHOR: name` ... `// ANCHOR_END: name` pair in it. The links of a Markdown file
  included whole (SECURITY.md, BENCHMARKS.md) must resolve from the page that includes it.
- Every page of docs/src is in SUMMARY.md, and every page SUMMARY.md names exists.
- No Rust sample is written only in Markdown, where nothing compiles it: a ```rust block of the
  guide holds one {{#include}} of a compiled file (an example), and one of README.md (which
  crates.io shows, so it cannot include) follows a `<!-- check: FILE -->` line and is a verbatim
  part of FILE.

Prints one line per problem (`FILE:LINE: ...`) and exits 1 if there is any; else prints one line.
External links (http, https, mailto) are not fetched.
"""

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def under(directory, relative):
    """`relative` joined to `directory`, `..` taken out but symbolic links kept (the book copies
    a linked file into its output as if it were there)."""
    return Path(os.path.normpath(directory / relative))
SRC = ROOT / "docs" / "src"

FENCE = re.compile(r"^\s*(```|~~~)")
INCLUDE = re.compile(r"(?<!\\)\{\{#include\s+([^}\s:]+)(?::([A-Za-z0-9_-]+))?\s*\}\}")
# [text](target) and ![alt](target); the target ends at white space or the closing parenthesis.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line)


def expand_includes(path, text):
    """The text with each {{#include}} replaced by what it names (for the headings it brings)."""

    def replace(match):
        target = under(path.parent, match.group(1))
        return target.read_text(encoding="utf-8") if target.is_file() and not match.group(2) else ""

    return INCLUDE.sub(replace, text)


def slug(heading):
    """The id mdBook (and GitHub) give a heading: lower case, words joined by `-`, punctuation out."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "").strip().lower()
    return "".join(c if c.isalnum() or c in "-_" else "-" if c == " " else "" for c in text)


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, ids = {}, set()
        text = expand_includes(path, path.read_text(encoding="utf-8"))
        for _, line in prose_lines(text):
            match = HEADING.match(line)
            if match:
                base = slug(match.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                ids.add(base if count == 0 else f"{base}-{count}")
        _anchors[path] = ids
    return _anchors[path]


def check_file(path, inside, problems, text=None, where=None):
    """The links and includes of `path` (or of `text`, a file included into `path`)."""
    text = path.read_text(encoding="utf-8") if text is None else text
    where = where or path.relative_to(ROOT)
    for number, line in enumerate(text.split("\n"), 1):
        for match in INCLUDE.finditer(line):
            target = under(path.parent, match.group(1))
            if not target.is_file():
                problems.append(f"{where}:{number}: include of a missing file {match.group(1)}")
            elif target.suffix == ".md" and not match.group(2):
                # A page included whole: its links are read from the including page's place.
                included = f"{where}:{number}: {{{{#include {match.group(1)}}}}}"
                check_file(path, inside, problems, target.read_text(encoding="utf-8"), included)
            elif match.group(2):
                body = target.read_text(encoding="utf-8")
                name = match.group(2)
                if not (re.search(rf"ANCHOR:\s*{name}\b", body) and re.search(rf"ANCHOR_END:\s*{name}\b", body)):
                    problems.append(f"{where}:{number}: {match.group(1)} has no ANCHOR {name} (and ANCHOR_END)")
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto:
            file_part, _, fragment = target.partition("#")
            resolved = under(path.parent, file_part) if file_part else path
            if not resolved.exists():
                problems.append(f"{where}:{number}: {target}: no such file")
                continue
            if inside not in resolved.parents and resolved != inside:
                problems.append(f"{where}:{number}: {target}: outside {inside.relative_to(ROOT)}")
                continue
            if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
                problems.append(f"{where}:{number}: {target}: no heading #{fragment} in {resolved.relative_to(ROOT)}")


def check_samples(path, problems):
    lines = path.read_text(encoding="utf-8").split("\n")
    where = path.relative_to(ROOT)
    number = 0
    while number < len(lines):
        opening = lines[number]
        number += 1
        if not FENCE.match(opening):
            continue
        start = number
        while number < len(lines) and not FENCE.match(lines[number]):
            number += 1
        body, number = lines[start:number], number + 1
        if opening.strip().removeprefix("```").split(",")[0] != "rust":
            continue
        if path.parent != ROOT:
            if not (len(body) == 1 and INCLUDE.fullmatch(body[0].strip())):
                problems.append(f"{where}:{start}: a Rust sample must be one {{{{#include}}}} of a compiled file")
            continue
        marker = re.fullmatch(r"<!-- check: (\S+) -->", lines[start - 2].strip()) if start >= 2 else None
        if not marker:
            problems.append(f"{where}:{start}: a Rust sample needs `<!-- check: FILE -->` on the line before")
        elif not (ROOT / marker.group(1)).is_file():
            problems.append(f"{where}:{start - 1}: {marker.group(1)}: no such file")
        elif "\n".join(body) not in (ROOT / marker.group(1)).read_text(encoding="utf-8"):
            problems.append(f"{where}:{start}: the sample is not a verbatim part of {marker.group(1)}")


def check_summary(problems):
    summary = SRC / "SUMMARY.md"
    named = set()
    for number, line in prose_lines(summary.read_text(encoding="utf-8")):
        for match in LINK.finditer(line):
            named.add(under(SRC, match.group(1).partition("#")[0]))
    for page in sorted(SRC.rglob("*.md")):
        if page != summary and page not in named:
            problems.append(f"{page.relative_to(ROOT)}: not in docs/src/SUMMARY.md")


def main():
    problems = []
    pages = sorted(SRC.rglob("*.md"))
    for page in pages:
        check_file(page, SRC, problems)
        check_samples(page, problems)
    check_file(ROOT / "README.md", ROOT, problems)
    check_samples(ROOT / "README.md", problems)
    check_summary(problems)
    for problem in problems:
        print(problem)
    if problems:
        print(f"docs/check.py: {len(problems)} problems in {len(pages) + 1} files")
        return 1
    print(f"docs/check.py: {len(pages) + 1} files: every internal link, anchor and include resolves, every Rust sample is compiled code")
    return 0


if __name__ == "__main__":
    sys.exit(main())
