#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# Checks that every relative link of the Markdown files resolves: each
# [text](target) or ![alt](target) outside code, its target without the
# "#anchor" taken from the file's own folder, must name a file or folder of
# the tree. Links with a scheme (https:, mailto:) and bare anchors are not
# followed. Prints "FILE:LINE: TARGET: no such file or folder" for each
# broken link, exit 1 if any (make check and make check-unit run it first).
#
#   tools/check-links.py [FILE.md...]   (default: every .md outside build/)
import os
import re
import sys

SKIP_DIRS = {".git", "build", "node_modules"}
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.relpath(os.path.join(folder, name), root)


def broken_links(path):
    """(line number, target) of each relative link in path that names nothing."""
    in_fence = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            prose = re.sub(r"`[^`]*`", "", line)
            for target in LINK.findall(prose):
                if SCHEME.match(target) or target.startswith("#"):
                    continue
                file_part = target.split("#", 1)[0]
                if not os.path.exists(os.path.join(os.path.dirname(path), file_part)):
                    yield number, target


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.relpath(os.path.abspath(p), root) for p in sys.argv[1:]]
    os.chdir(root)
    paths = paths or list(markdown_files("."))
    bad = 0
    for path in paths:
        for number, target in broken_links(path):
            print(f"{path}:{number}: {target}: no such file or folder")
            bad += 1
    if bad:
        print(f"check-links: {bad} broken relative link(s) in the Markdown files above")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
