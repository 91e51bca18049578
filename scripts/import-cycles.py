#!/usr/bin/env python3
"""Fail on an import circle between the analyzer's files, or between its rooms.

The analyzer's rooms go in data-flow order (ARCHITECTURE.md: "No module imports one
that imports it"). This script reads every `crate::`, `super::` and `self::` path of
analyzer/src/**/*.rs (in `use` lines and in code, not in comments; a `use child::Name`
too), maps each to the file that defines what it names (a `mod.rs`'s module is its
directory's; `foo.rs` beside `foo/` is `foo`'s), and reports every strongly connected
set of files, with one shortest circle through each of its files and the line behind
each step; then the same between its rooms (the crate's top-level modules: `metrics/`,
`report/`, `units.rs`...). `mod foo;` declarations are not imports, and neither are
`pub use` re-exports: a path through one counts as an import of the file that defines
the name. Test modules count: a test imports like any code. Exit status: 0 without a
circle, 1 with one, 2 on bad usage.

scripts/import-cycles.allow, when there is one (there is none now: every circle is
broken), lists imports (`from.rs -> to.rs`, paths under SRC_DIR, `#` comments) left out
of the graph of analyzer/src while a circle waits to be broken: it only shrinks, and an
entry that no longer matches an import is an error too, so that it is deleted.

    scripts/import-cycles.py [SRC_DIR]     (default: analyzer/src)
"""

import os
import re
import sys
from collections import deque

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_of(src, path):
    """The module path (a tuple of names, () for the crate root) a file defines."""
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel == ["lib"] or rel == ["main"]:
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def strip_comments(text):
    """The text with comments and string/char literals blanked (lines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    if text[i] == "\n":
                        out.append("\n")
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and not (
            i and (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            end = n if end < 0 else end + 1 + len(hashes)
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                elif text[i] == "\n":
                    out.append("\n")
                i += 1
            i += 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:i + 4])
            i += len(m.group(0))
            out.append("' '")
        elif c == "'" and text.startswith("'\\u{", i):
            i = text.find("}'", i) + 2
            out.append("' '")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases and globs kept)."""
    tree = re.sub(r"\s*(::|[{},])\s*", r"\1", re.sub(r"\s+", " ", tree)).strip()

    def split_top(s):
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            parts.append(cur)
        return parts

    def go(prefix, s):
        brace = s.find("{")
        if brace < 0:
            return [prefix + s]
        head, body = s[:brace], s[brace + 1: s.rfind("}")]
        result = []
        for part in split_top(body):
            result.extend(go(prefix + head, part))
        return result

    return go("", tree)


USE = re.compile(r"(\bpub(?:\([^)]*\))?\s+)?\buse\s+([^;]*);", re.S)
PATH = re.compile(r"(?<![\w:])(crate|super|self)((?:::\w+)+)")
INLINE_MOD = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*\{")


def paths_of(text):
    """(line, path, inline-module nesting, re-exported name or None) for each
    crate/super/self path of a file, and each `use child::...` path."""
    found = []
    lines = text.split("\n")
    # Inline `mod name {` blocks, by their indentation (rustfmt's layout): a path
    # inside one is relative to it.
    stack = []  # (indent, name)
    nesting_at = []
    for line in lines:
        while stack and line.startswith(" " * stack[-1][0] + "}") and (
            len(line) - len(line.lstrip()) == stack[-1][0]
        ):
            stack.pop()
        nesting_at.append(tuple(name for _, name in stack))
        m = INLINE_MOD.match(line)
        if m:
            stack.append((len(m.group(1)), m.group(2)))
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def line_at(pos):
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    covered = []
    for m in USE.finditer(text):
        ln = line_at(m.start())
        covered.append((m.start(), m.end()))
        public = m.group(1) is not None
        for p in expand_use(m.group(2)):
            if p.endswith("*"):
                if p.startswith(("crate::", "super::", "self::")):
                    found.append((ln, p, nesting_at[ln], None))
                continue
            alias = p.split(" as ")
            p = alias[0]
            name = alias[1] if len(alias) > 1 else p.split("::")[-1]
            if p.endswith("::self"):
                p = p[: -len("::self")]
                name = alias[1] if len(alias) > 1 else p.split("::")[-1]
            binding = (name, public)
            if p.startswith(("crate::", "super::", "self::")):
                found.append((ln, p, nesting_at[ln], binding))
            elif "::" in p and not p.startswith("::"):
                # `use child::Name`: relative when `child` is a module of this file,
                # else a name of another crate (absolute() tells them apart).
                found.append((ln, "self::" + p, nesting_at[ln] + ("?",), binding))
    for m in PATH.finditer(text):
        if any(a <= m.start() < b for a, b in covered):
            continue
        ln = line_at(m.start())
        found.append((ln, m.group(1) + m.group(2), nesting_at[ln], None))
    return found


def absolute(path, here, nesting, modules):
    """A path's absolute form (a list of names), or None for another crate's."""
    parts = [p for p in path.split("::") if p]
    maybe = nesting[-1:] == ("?",)
    nesting = nesting[:-1] if maybe else nesting
    base = list(here) + list(nesting)
    if maybe and tuple(base + parts[1:2]) not in modules:
        return None
    if parts[0] == "crate":
        absolute, parts = [], parts[1:]
    else:
        absolute = base
        while parts and parts[0] in ("self", "super"):
            if parts[0] == "super":
                absolute = absolute[:-1]
            parts = parts[1:]
    return list(absolute) + [p for p in parts if p != "*"]


def resolve(parts, modules, bindings, depth=0):
    """The file that defines what an absolute path names: the longest known module
    prefix, followed through that module's `pub use` of the next name (a re-export is
    no import of its own: whoever names it depends on the file that defines it)."""
    for k in range(len(parts), -1, -1):
        module = tuple(parts[:k])
        if module in modules:
            rest = parts[k:]
            names = bindings.get(module, {})
            if rest and rest[0] in names and depth < 16:
                target = names[rest[0]]
                if target is None:
                    return None
                return resolve(target + rest[1:], modules, bindings, depth + 1)
            return module
    return ()


def tarjan(nodes, edges):
    index, low, on, stack, sccs, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            sccs.append(sorted(scc))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sccs


def shortest_cycle(start, edges, within):
    prev, queue, seen = {}, deque([start]), {start}
    while queue:
        v = queue.popleft()
        for w in sorted(edges.get(v, ())):
            if w not in within:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in seen:
                seen.add(w)
                prev[w] = v
                queue.append(w)
    return None


def main():
    args = sys.argv[1:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src = args[0] if args else os.path.join(ROOT, "analyzer", "src")
    files = {}
    for dirpath, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(dirpath, name)
                files[module_of(src, path)] = path
    modules = set(files)
    found, bindings = {}, {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            found[module] = paths_of(strip_comments(f.read()))
        for _, p, nesting, binding in found[module]:
            parts = absolute(p, module, nesting, modules)
            if binding:
                # Every `use` binds a name others may reach through this module
                # (`crate::fxhash` of lib.rs's `use overlap_format::fxhash`): None for
                # another crate's.
                scope = module + tuple(n for n in nesting if n != "?")
                bindings.setdefault(scope, {})[binding[0]] = parts
    edges, why = {}, {}
    for module in files:
        for line, p, nesting, binding in found[module]:
            parts = absolute(p, module, nesting, modules)
            if (binding and binding[1]) or parts is None:
                continue
            target = resolve(parts, modules, bindings)
            if target is None or target == module:
                continue
            edges.setdefault(module, set()).add(target)
            why.setdefault((module, target), (line + 1, p))

    def name(m):
        return os.path.relpath(files[m], src)

    allow_path = os.path.join(ROOT, "scripts", "import-cycles.allow")
    stale = []
    if not args and os.path.exists(allow_path):
        by_name = {name(m): m for m in files}
        with open(allow_path, encoding="utf-8") as f:
            for raw in f:
                entry = raw.split("#")[0].strip()
                if not entry:
                    continue
                a, _, b = (x.strip() for x in entry.partition("->"))
                edge = (by_name.get(a), by_name.get(b))
                if edge[1] in edges.get(edge[0], ()):
                    edges[edge[0]].discard(edge[1])
                else:
                    stale.append(entry)
    for entry in stale:
        print(f"scripts/import-cycles.allow: {entry}: no such import any more: delete the line")

    circles = report(tarjan(modules, edges), edges, why, name, "files")

    # The rooms: the crate's top-level modules (lib.rs its own), each a directory or a
    # file. One room imports another only one way, as the files do.
    def room(m):
        return m[:1] if m else ()

    room_edges, room_why = {}, {}
    for a, targets in edges.items():
        for b in targets:
            if room(a) != room(b):
                room_edges.setdefault(room(a), set()).add(room(b))
                line, p = why[(a, b)]
                room_why.setdefault((room(a), room(b)), (f"{name(a)}:{line}", p))

    def room_name(r):
        return r[0] if r else "lib.rs"

    rooms = {room(m) for m in modules}
    circles += report(tarjan(rooms, room_edges), room_edges, room_why, room_name, "rooms")
    if circles:
        print(f"{circles} import circle(s) in {src}", file=sys.stderr)
        return 1
    if stale:
        return 1
    print(
        f"no import circle among the {len(files)} files of {os.path.relpath(src, ROOT)}, "
        f"nor among its {len(rooms)} rooms"
    )
    return 0


def report(components, edges, why, name, what):
    """Prints each circle (a strongly connected set of more than one) with one shortest
    circle through each of its members, the line behind each step; how many there are."""
    sccs = [s for s in components if len(s) > 1]
    for i, scc in enumerate(sccs, 1):
        print(f"import circle {i} among {what}: " + ", ".join(name(m) for m in scc))
        within, shown = set(scc), set()
        for m in scc:
            cycle = shortest_cycle(m, edges, within)
            key = frozenset(zip(cycle, cycle[1:]))
            if key in shown:
                continue
            shown.add(key)
            steps = []
            for a, b in zip(cycle, cycle[1:]):
                line, p = why[(a, b)]
                where = line if isinstance(line, str) else f"{name(a)}:{line}"
                steps.append(f"{where} ({p})")
            print("    " + " -> ".join(steps) + f" -> {name(cycle[-1])}")
    return len(sccs)

if __name__ == "__main__":
    sys.exit(main())
