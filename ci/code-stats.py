#!/usr/bin/env python3
"""Prints what issue 36 measures of the code, for before/after notes:
the longest functions outside tests, the number of `thread_local!`s, and
the `Result<_, String>`s in `pub(crate)` (or wider) signatures.

    python3 ci/code-stats.py [N]      # the N longest functions (default 15)

Reads rustfmt-formatted source: a function ends at the first `}` at its
own indentation. Test code (tests.rs files, `#[cfg(test)]` modules) is
left out. Not run by CI; a reading aid.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
PUB_FN = re.compile(r"^\s*pub(?:\((?:crate|super|in [^)]*)\))?\s+(?:async\s+)?fn\b")


def production_lines(text):
    """The file's lines with `#[cfg(test)]` items blanked out."""
    lines = text.split("\n")
    out = list(lines)
    i = 0
    while i < len(lines):
        if lines[i].strip() == "#[cfg(test)]":
            indent = len(lines[i]) - len(lines[i].lstrip())
            j = i + 1
            # The item after the attribute: one line (`mod tests;`) or a block.
            if j < len(lines) and lines[j].rstrip().endswith("{"):
                k = j + 1
                while k < len(lines) and not (
                    lines[k].startswith(" " * indent + "}") and len(lines[k]) - len(lines[k].lstrip()) == indent
                ):
                    k += 1
                for m in range(i, min(k + 1, len(lines))):
                    out[m] = ""
                i = k + 1
                continue
            out[i] = ""
        i += 1
    return out


def functions(path, lines):
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m or line.rstrip().endswith(";"):
            continue
        indent = m.group(1)
        # The signature may span lines; the body ends at `}` on its indent.
        for j in range(i + 1, len(lines)):
            if lines[j] == indent + "}" or lines[j].startswith(indent + "}") and lines[j].strip() in ("}", "};", "},"):
                if len(lines[j]) - len(lines[j].lstrip()) == len(indent):
                    yield (j - i + 1, f"{os.path.relpath(path, os.path.dirname(ROOT))}:{i + 1}", m.group(2))
                    break


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    found, thread_locals, string_results = [], 0, 0
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            p = os.path.join(d, f)
            lines = production_lines(open(p, encoding="utf-8").read())
            found.extend(functions(p, lines))
            thread_locals += sum(l.count("thread_local!") for l in lines)
            # A signature may span lines: join each pub fn's up to its body.
            for i, l in enumerate(lines):
                if PUB_FN.match(l):
                    sig = " ".join(lines[i : i + 8]).split("{")[0]
                    if re.search(r"->\s*Result<[^;]*,\s*String>", sig):
                        string_results += 1
    found.sort(reverse=True)
    print(f"longest functions (lines, outside tests):")
    for length, where, name in found[:n]:
        print(f"  {length:4}  {name}  ({where})")
    print(f"thread_local!s: {thread_locals}")
    print(f"pub(crate)-or-wider functions returning Result<_, String>: {string_results}")


if __name__ == "__main__":
    main()
