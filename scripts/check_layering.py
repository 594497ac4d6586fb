#!/usr/bin/env python3
"""The one-way data flow of STYLE.md, checked against the code.

STYLE.md's "Layering" block lists, per module of src/, the modules it may use. This script reads every
`#include "servelab/<module>/..."` (public) and `#include "<module>/..."` (private) of src/<module>/ and
include/servelab/<module>/, and every `servelab_<module>` target named in src/<module>/CMakeLists.txt
(outside comments), and fails on:
  - an include or link of a module that the block does not allow (an edge against the flow);
  - an include of another module's private header (the build refuses it too: cmake/servelab_module.cmake);
  - a public header that includes a private one (its users could not compile it);
  - a module directory of src/ that the block does not list (a new module must say where it sits);
  - a cycle in the block itself (the flow must be one-way).
A module split into rooms (sub-folders of src/<module>/ and include/servelab/<module>/, e.g. tune) has its
own block, <!-- rooms:<module>:begin --> ... <!-- rooms:<module>:end -->: per room the rooms it may include
(`<module>` names the module's top folder), and `allow <file> → <room>: <reason>` lines for the back-edges
that exist and are written down with their reason. The check fails on an include between rooms against that
flow, on a folder that is no listed room, on a listed room without a folder, on an `allow` no include needs
(stale), and on a cycle among the rooms.
It also keeps STYLE.md's header rule: a public header (include/servelab/) over 150 lines must be listed, with
its reason, in the <!-- headers:begin --> ... <!-- headers:end --> block, and a listed one must still be long.

Usage: check_layering.py [REPO_ROOT]          (ctest `layering`)
       check_layering.py --self-test          (ctest `layering_self_test`: a tree with a bad include
                                               and a bad link must fail, a good one must pass)
Exit status 0 = the code follows the flow, 1 = violations (each printed with file:line), 2 = bad input.
"""
import os
import shutil
import re
import sys
import tempfile

BLOCK_START = "<!-- layering:begin -->"
BLOCK_END = "<!-- layering:end -->"
# "servelab/<module>/x.h" is a public header (include/servelab/<module>/), "<module>/x.h" a private one.
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"(servelab/)?([A-Za-z0-9_]+)/')
LINK_RE = re.compile(r"\bservelab_([A-Za-z0-9_]+)\b")
# Targets of a module that are not module names (servelab_model_objects is model's archive).
TARGET_ALIASES = {"model_objects": "model"}
# CMake names of a module's own things that are not links to a module.
NOT_MODULES = {"git_version", "LIBS", "SIM_CALIBRATION_JSON", "MODEL_ARCH_SOURCES", "CLI_SOURCES"}


def parse_rules(style_text):
    """{module: set(allowed modules) or {'*'}} from STYLE.md's layering block."""
    if BLOCK_START not in style_text or BLOCK_END not in style_text:
        raise ValueError(f"STYLE.md has no {BLOCK_START} ... {BLOCK_END} block")
    block = style_text.split(BLOCK_START, 1)[1].split(BLOCK_END, 1)[0]
    rules = {}
    for raw in block.splitlines():
        line = raw.strip().strip("`")
        if not line or line.startswith("```"):
            continue
        m = re.match(r"^([a-z_]+)\s*(?:→|->|:)\s*(.*)$", line)
        if not m:
            raise ValueError(f"STYLE.md layering block: cannot read line {raw!r} (want 'module → a, b')")
        deps = {d for d in re.split(r"[\s,]+", m.group(2).strip()) if d and d != "(nothing)"}
        rules[m.group(1)] = deps
    return rules


def parse_rooms(style_text, module):
    """(rules, allows) of <module>'s rooms block, or None when STYLE.md has none. rules: {room: set(rooms) or
    {'*'}}; allows: {(file relative to the repository, room): reason}. An `allow` line's reason may go on over
    the following lines that start with white space."""
    start, end = f"<!-- rooms:{module}:begin -->", f"<!-- rooms:{module}:end -->"
    if start not in style_text:
        return None
    if end not in style_text:
        raise ValueError(f"STYLE.md has {start} without {end}")
    block = style_text.split(start, 1)[1].split(end, 1)[0]
    rules, allows, last = {}, {}, None
    for raw in block.splitlines():
        line = raw.strip().strip("`")
        if not line or line.startswith("```"):
            continue
        if raw[:1].isspace() and last is not None:
            allows[last] += " " + line
            continue
        m = re.match(r"^allow\s+(\S+)\s*(?:→|->)\s*([a-z_]+)\s*:\s*(.+)$", line)
        if m:
            last = (m.group(1), m.group(2))
            allows[last] = m.group(3)
            continue
        last = None
        m = re.match(r"^([a-z_]+)\s*(?:→|->|:)\s*(.*)$", line)
        if not m:
            raise ValueError(f"STYLE.md rooms block of {module}: cannot read line {raw!r} "
                             "(want 'room → a, b' or 'allow FILE → room: reason')")
        rules[m.group(1)] = {d for d in re.split(r"[\s,]+", m.group(2).strip()) if d and d != "(nothing)"}
    return rules, allows


def room_of(module, rel):
    """The room of a path relative to src/<module>/ or include/servelab/<module>/: its first folder, or
    <module> for a file at the top."""
    parts = rel.split("/")
    return parts[0] if len(parts) > 1 else module


def check_rooms(root, module, rules, allows):
    """Violations of <module>'s rooms block."""
    problems = []
    cycle = find_cycle(rules)
    if cycle:
        problems.append(f"STYLE.md: the rooms of {module} have a cycle: " + " → ".join(cycle))
    tops = [os.path.join(root, "src", module), os.path.join(root, "include", "servelab", module)]
    present = {d for top in tops if os.path.isdir(top) for d in os.listdir(top) if os.path.isdir(os.path.join(top, d))}
    for d in sorted(present - set(rules)):
        problems.append(f"{module}/{d}: room not listed in STYLE.md's rooms block of {module}")
    for r in sorted(set(rules) - present - {module}):
        problems.append(f"STYLE.md: the rooms of {module} list '{r}', which is no folder of src/{module}/ "
                        f"or include/servelab/{module}/")
    include_re = re.compile(r'^\s*#\s*include\s+"(?:servelab/)?' + re.escape(module) + r'/([^"]+)"')
    used = set()
    for top in tops:
        for dirpath, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".in")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                me = room_of(module, os.path.relpath(path, top).replace(os.sep, "/"))
                allowed = rules.get(me, set())
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = include_re.match(line)
                        if not m:
                            continue
                        dep = room_of(module, m.group(1))
                        if dep == me or "*" in allowed or dep in allowed or dep not in rules:
                            continue
                        if (rel, dep) in allows:
                            used.add((rel, dep))
                            continue
                        problems.append(f"{rel}:{n}: room {module}/{me} includes room {module}/{dep} (against "
                                        f"the rooms' flow: {me} → {', '.join(sorted(allowed)) or 'nothing'}; "
                                        "fix it, or write it down as an `allow` with its reason)")
    for rel, dep in sorted(set(allows) - used):
        problems.append(f"STYLE.md: the rooms of {module} allow {rel} → {dep}, which no include needs (stale)")
    return problems


def find_cycle(rules):
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in sorted(rules.get(m, ())):
            if d == "*":
                continue
            if state.get(d) == 1:
                return path + [d]
            if state.get(d) is None:
                c = visit(d, path + [d])
                if c:
                    return c
        state[m] = 2
        return None

    for m in sorted(rules):
        if state.get(m) is None:
            c = visit(m, [m])
            if c:
                return c
    return None


HEADER_LINES = 150
HEADERS_START, HEADERS_END = "<!-- headers:begin -->", "<!-- headers:end -->"


def parse_long_headers(style_text):
    """{path under include/servelab/: reason} from STYLE.md's headers block ({} when it has none)."""
    if HEADERS_START not in style_text:
        return {}
    if HEADERS_END not in style_text:
        raise ValueError(f"STYLE.md has {HEADERS_START} without {HEADERS_END}")
    block = style_text.split(HEADERS_START, 1)[1].split(HEADERS_END, 1)[0]
    listed = {}
    for raw in block.splitlines():
        line = raw.strip()
        if not line or line.startswith("```"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            raise ValueError(f"STYLE.md headers block: {raw!r} gives no reason (want 'module/header.h  why')")
        listed[parts[0]] = parts[1]
    return listed


def check_header_sizes(root, listed):
    """Public headers over HEADER_LINES lines not listed in STYLE.md, and listed ones that are not long."""
    problems = []
    top = os.path.join(root, "include", "servelab")
    long_ones = set()
    for dirpath, _, files in os.walk(top):
        for name in sorted(files):
            if not name.endswith(".h"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, top).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as f:
                n = sum(1 for _ in f)
            if n > HEADER_LINES:
                long_ones.add(rel)
                if rel not in listed:
                    problems.append(f"include/servelab/{rel}: {n} lines, over {HEADER_LINES} and not listed in "
                                    "STYLE.md's headers block (split it, or say there why it stays whole)")
    for rel in sorted(set(listed) - long_ones):
        problems.append(f"STYLE.md: the headers block lists {rel}, which is not a public header over "
                        f"{HEADER_LINES} lines (stale)")
    return problems


def check(root):
    """List of violation strings for the tree at `root`."""
    with open(os.path.join(root, "STYLE.md"), encoding="utf-8") as f:
        style_text = f.read()
    rules = parse_rules(style_text)
    problems = check_header_sizes(root, parse_long_headers(style_text))
    cycle = find_cycle(rules)
    if cycle:
        problems.append("STYLE.md: the layering has a cycle: " + " → ".join(cycle))
    src = os.path.join(root, "src")
    modules = sorted(d for d in os.listdir(src) if os.path.isfile(os.path.join(src, d, "CMakeLists.txt")))
    for unknown in sorted(set(rules) - set(modules)):
        problems.append(f"STYLE.md: layering lists '{unknown}', which is not a module of src/")
    for mod in modules:
        if mod not in rules:
            problems.append(f"src/{mod}: module not listed in STYLE.md's layering block")
            continue
        allowed = rules[mod]

        def bad(dep):
            return dep != mod and dep in modules and "*" not in allowed and dep not in allowed

        public_dir = os.path.join(root, "include", "servelab", mod)
        walked = [(d, fs) for top in (os.path.join(src, mod), public_dir) for d, _, fs in os.walk(top)]
        for dirpath, files in walked:
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                in_public = os.path.abspath(path).startswith(os.path.abspath(public_dir) + os.sep)
                if name.endswith((".h", ".cc", ".in")):
                    with open(path, encoding="utf-8", errors="replace") as f:
                        for n, line in enumerate(f, 1):
                            m = INCLUDE_RE.match(line)
                            if not m or m.group(2) not in modules:
                                continue
                            dep, private = m.group(2), not m.group(1)
                            if bad(dep):
                                problems.append(f"{rel}:{n}: {mod} includes {dep} "
                                                f"(against the flow: {mod} → {', '.join(sorted(allowed)) or 'nothing'})")
                            elif private and dep != mod:
                                problems.append(f"{rel}:{n}: {mod} includes a private header of {dep} "
                                                f"(use include/servelab/{dep}/, or make the header public)")
                            elif private and in_public:
                                problems.append(f"{rel}:{n}: public header includes the private header "
                                                f"{line.strip()[len('#include '):]} (move it to include/servelab/{dep}/)")
                elif name == "CMakeLists.txt":
                    with open(path, encoding="utf-8") as f:
                        for n, line in enumerate(f, 1):
                            for t in LINK_RE.findall(line.split("#", 1)[0]):
                                if t in NOT_MODULES:
                                    continue
                                dep = TARGET_ALIASES.get(t, t)
                                if bad(dep):
                                    problems.append(f"{rel}:{n}: servelab_{mod} links servelab_{t} "
                                                    f"(against the flow: {mod} → {', '.join(sorted(allowed)) or 'nothing'})")
        with open(os.path.join(root, "STYLE.md"), encoding="utf-8") as f:
            rooms = parse_rooms(f.read(), mod)
        if rooms:
            problems += check_rooms(root, mod, *rooms)
    return problems


def self_test():
    def tree(rules_lines, files):
        d = tempfile.mkdtemp(prefix="servelab_layering_")
        with open(os.path.join(d, "STYLE.md"), "w", encoding="utf-8") as f:
            f.write("x\n" + BLOCK_START + "\n```\n" + "\n".join(rules_lines) + "\n```\n" + BLOCK_END + "\n")
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
                f.write(text)
        return d

    rules = ["top → low", "low → (nothing)"]
    good = {"src/top/CMakeLists.txt": "add_library(servelab_top a.cc)\ntarget_link_libraries(servelab_top PUBLIC servelab_low)\n",
            "src/top/a.cc": '#include "servelab/low/low.h"\n#include "top/a.h"\n#include <vector>\n',
            "src/low/CMakeLists.txt": "add_library(servelab_low b.cc)\n",
            "src/low/b.h": "#pragma once\n",
            "include/servelab/low/low.h": "#pragma once\n"}
    failures = []
    if check(tree(rules, good)):
        failures.append("a tree that follows its flow was reported: " + "; ".join(check(tree(rules, good))))
    bad_include = dict(good, **{"include/servelab/low/low.h": '#pragma once\n#include "servelab/top/a.h"\n'})
    got = check(tree(rules, bad_include))
    if not any("include/servelab/low/low.h:2: low includes top" in p for p in got):
        failures.append(f"an include against the flow was not found: {got}")
    private_include = dict(good, **{"src/top/a.cc": '#include "low/b.h"\n'})
    got = check(tree(rules, private_include))
    if not any("src/top/a.cc:1: top includes a private header of low" in p for p in got):
        failures.append(f"an include of another module's private header was not found: {got}")
    public_to_private = dict(good, **{"include/servelab/low/low.h": '#pragma once\n#include "low/b.h"\n'})
    got = check(tree(rules, public_to_private))
    if not any("include/servelab/low/low.h:2: public header includes the private header" in p for p in got):
        failures.append(f"a public header including a private one was not found: {got}")
    bad_link = dict(good, **{"src/low/CMakeLists.txt": "add_library(servelab_low b.cc)\n"
                                                        "target_link_libraries(servelab_low PRIVATE\n  servelab_top)\n"})
    got = check(tree(rules, bad_link))
    if not any("src/low/CMakeLists.txt:3: servelab_low links servelab_top" in p for p in got):
        failures.append(f"a link against the flow was not found: {got}")
    unlisted = dict(good, **{"src/new/CMakeLists.txt": "add_library(servelab_new c.cc)\n"})
    if not any("src/new: module not listed" in p for p in check(tree(rules, unlisted))):
        failures.append("an unlisted module was not reported")
    if not any("cycle" in p for p in check(tree(["top → low", "low → top"], good))):
        failures.append("a cycle in the flow was not reported")
    # Rooms: top/hi may include top/lo; lo including hi is a back-edge unless written down as an `allow`.
    rooms_lines = ["<!-- rooms:top:begin -->", "hi → lo", "lo → (nothing)", "<!-- rooms:top:end -->"]
    roomed = dict(good, **{"src/top/hi/h.cc": '#include "top/lo/l.h"\n', "src/top/lo/l.h": "#pragma once\n",
                           "src/top/lo/l.cc": '#include "servelab/top/hi/h.h"\n',
                           "include/servelab/top/hi/h.h": "#pragma once\n"})

    def rooms_tree(extra):
        d = tree(rules, roomed)
        with open(os.path.join(d, "STYLE.md"), "a", encoding="utf-8") as f:
            f.write("\n".join(rooms_lines[:3] + extra + rooms_lines[3:]) + "\n")
        return d

    got = check(rooms_tree([]))
    if not any("src/top/lo/l.cc:1: room top/lo includes room top/hi" in p for p in got):
        failures.append(f"an include against the rooms' flow was not found: {got}")
    got = check(rooms_tree(["allow src/top/lo/l.cc → hi: because", "  the reason goes on"]))
    if got:
        failures.append(f"a back-edge written down as allowed was reported: {got}")
    got = check(rooms_tree(["allow src/top/lo/l.cc → hi: because", "allow src/top/lo/x.cc → hi: stale"]))
    if not any("allow src/top/lo/x.cc → hi, which no include needs" in p for p in got):
        failures.append(f"a stale allow was not reported: {got}")
    roomed["src/top/new/n.cc"] = "\n"
    got = check(rooms_tree(["allow src/top/lo/l.cc → hi: because"]))
    if not any("top/new: room not listed" in p for p in got):
        failures.append(f"an unlisted room was not reported: {got}")
    del roomed["src/top/new/n.cc"]
    rooms_lines[2] = "lo → hi"
    if not any("the rooms of top have a cycle" in p for p in check(rooms_tree([]))):
        failures.append("a cycle among the rooms was not reported")
    # Public headers over HEADER_LINES lines: listed in STYLE.md with a reason, never stale.
    hd = tempfile.mkdtemp(prefix="servelab_headers_")
    os.makedirs(os.path.join(hd, "include", "servelab", "a"))
    with open(os.path.join(hd, "include", "servelab", "a", "big.h"), "w", encoding="utf-8") as f:
        f.write("//\n" * (HEADER_LINES + 1))
    if not any("a/big.h: 151 lines" in p for p in check_header_sizes(hd, {})):
        failures.append("a long public header not listed in STYLE.md was not reported")
    if check_header_sizes(hd, {"a/big.h": "why"}):
        failures.append("a long public header listed in STYLE.md was reported")
    if not any("(stale)" in p for p in check_header_sizes(hd, {"a/big.h": "why", "a/gone.h": "why"})):
        failures.append("a stale entry of STYLE.md's headers block was not reported")
    shutil.rmtree(hd)
    for f in failures:
        print("self-test:", f)
    print("self-test:", "FAILED" if failures else "ok (15 cases)")
    return 1 if failures else 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    try:
        problems = check(root)
    except (OSError, ValueError) as e:
        print(f"check_layering: {e}")
        return 2
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} edge(s) against STYLE.md's layering (fix the code, or the flow if it is wrong)")
        return 1
    print("layering: every include and link of src/ follows STYLE.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
