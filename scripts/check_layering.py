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

Usage: check_layering.py [REPO_ROOT]          (ctest `layering`)
       check_layering.py --self-test          (ctest `layering_self_test`: a tree with a bad include
                                               and a bad link must fail, a good one must pass)
Exit status 0 = the code follows the flow, 1 = violations (each printed with file:line), 2 = bad input.
"""
import os
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


def check(root):
    """List of violation strings for the tree at `root`."""
    with open(os.path.join(root, "STYLE.md"), encoding="utf-8") as f:
        rules = parse_rules(f.read())
    problems = []
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
    for f in failures:
        print("self-test:", f)
    print("self-test:", "FAILED" if failures else "ok (7 cases)")
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
