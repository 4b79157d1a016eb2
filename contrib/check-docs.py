#!/usr/bin/env python3
#
# Check that README.md and docs/*.md name only things that exist, so that
# the docs cannot drift from the tree (test/suites/08-docs.sh runs it):
#   - paths and file names of this project (src/..., dma/gaudi_dma_cs.c,
#     hlsim_cs.c, 50-dma.sh ...) exist; citations of other trees (the
#     kernel, UCX, SynapseAI) are left alone;
#   - functions of this project (uct_gaudi_*, hlsim_*, synsim_*, nicsim_*)
#     are defined or used in the sources;
#   - suites (NN-name) exist in test/suites;
#   - UCX_GAUDI_* and HLSIM_*/SYNSIM_* variables are read by the code, and
#     every UCX_GAUDI_* variable the module defines is documented in
#     exactly one table row (--ucx-vars FILE: the `ucx_info -c` listing);
#   - every table of figures in docs/performance.md names the commit and
#     the command it came from.
# Prints one line per stale name and "N passed, N failed"; exits 1 on any.
#
# Usage: check-docs.py [--top DIR] [--ucx-vars FILE]
#
import argparse
import os
import re
import subprocess
import sys

LAYERS = {"api", "compat", "hl", "syn", "dev", "dma", "mem", "base", "copy",
          "ipc"}
OWN_TOP = {"src", "test", "docs", "contrib", "bench", "config", ".ci"}
OWN_SRC = ("src/uct/gaudi", "src/tools/perf/gaudi")
UCX_PATHS = ("test/gtest/uct", "test/gtest/ucs", "test/gtest/ucp",
             "test/gtest/common/", "test/apps")
OWN_FILE = re.compile(r"^(gaudi_|hlsim|synsim|nicsim|test_|uct_gaudi|"
                      r"libuct_gaudi|ucx_perftest_gaudi|ucx-gaudi|"
                      r"[0-9]{2}-)[\w.+-]*\.(c|h|cc|sh|am|in|py|map)$")
OWN_FUNC = re.compile(r"^(uct_gaudi_|hlsim_|synsim_|nicsim_)[a-z0-9_]+$")
SUITE = re.compile(r"(?<![\w/.-])([0-9]{2}-[a-z][a-z0-9]*(?:-[a-z0-9]+)*)"
                   r"(\.sh)?(?![\w/-])")
# NN-word that is a measure, not a suite
NOT_SUITE = {"bit", "byte", "bytes", "only", "transfer", "message", "way",
             "page", "core", "cores", "entry", "element", "deep", "wide"}
VAR = re.compile(r"\b((?:UCX_GAUDI|HLSIM|SYNSIM|NICSIM)_[A-Z0-9_]*[A-Z0-9])"
                 r"(\*|_\*|_<|_(?![A-Z0-9]))?")
# a line that cites another tree that has Gaudi code too (upstream UCX)
EXTERNAL = re.compile(r"upstream UCX|openucx|github\.com|UCX's own|"
                      r"libfabric", re.I)
CODE = re.compile(r"`([^`\n]+)`")
# a table row with a measured figure: a rate, a time, a share or a ratio
FIGURE = re.compile(r"[0-9](\.[0-9]+)?\s*(GB/s|MB/s|us|ns|ms|%)|\b[01]\.[0-9]{2}\b")
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
COMMAND = re.compile(r"`[^`]*(bench/|contrib/|make |ucx_perftest|"
                     r"gaudi_[a-z_]*bench)[^`]*`")


def tracked_files(top):
    out = subprocess.run(["git", "-C", top, "ls-files"], check=True,
                         capture_output=True, text=True).stdout
    files = [f for f in out.splitlines() if os.path.exists(os.path.join(top, f))]
    # files the tree has but git does not know yet count too
    out = subprocess.run(["git", "-C", top, "ls-files", "--others",
                          "--exclude-standard"], check=True,
                         capture_output=True, text=True).stdout
    return files + out.splitlines()


class Checker:
    def __init__(self, top, ucx_vars):
        self.top = top
        self.files = tracked_files(top)
        self.basenames = {os.path.basename(f) for f in self.files}
        self.dirs = set()
        for f in self.files:
            d = os.path.dirname(f)
            while d:
                self.dirs.add(d)
                d = os.path.dirname(d)
        self.sources = self.read_sources()
        self.makefiles = "\n".join(self.read(f) for f in self.files
                                   if f.endswith("Makefile.am"))
        self.ucx_vars = ucx_vars
        self.npass = 0
        self.failures = []

    def read(self, rel, top=None):
        with open(os.path.join(top or self.top, rel), errors="replace") as fh:
            return fh.read()

    def read_doc(self, rel):
        return self.read(rel, self.docs_top)

    def read_sources(self):
        text = []
        for f in self.files:
            # the check's own test names stale things on purpose
            if f.endswith(".md") or f == "test/suites/08-docs.sh" or \
                    not os.path.isfile(
                    os.path.join(self.top, f)):
                continue
            if f.startswith(("src/", "test/", "bench/", "contrib/", "config/",
                             ".ci/")) or f in ("configure.ac", "Makefile.am"):
                text.append(self.read(f))
        return "\n".join(text)

    def fail(self, where, what):
        self.failures.append("%s: %s" % (where, what))

    def ok(self):
        self.npass += 1

    # a path or file name of this project, if @a token is one
    def own_path(self, token):
        token = re.sub(r":[0-9][0-9,-]*$", "", token)   # file:line
        token = token.rstrip("/").strip("<>")
        if not token or re.search(r"[<>{}*$~ ]|\.\.\.|N$|VERSION", token):
            return None
        token = token.replace("/.libs/", "/")
        parts = token.split("/")
        if token.startswith("uct/gaudi/"):
            return "src/" + token
        if parts[0] in OWN_TOP and len(parts) > 1:
            # UCX's tree has src/ and test/ too
            if token.startswith(UCX_PATHS) or \
                    (parts[0] == "src" and not token.startswith(OWN_SRC)):
                return None
            return token
        if parts[0] in LAYERS and len(parts) > 1 and \
                OWN_FILE.match(parts[-1]):
            return "src/uct/gaudi/" + token
        if len(parts) == 1 and OWN_FILE.match(token):
            return token
        return None

    def path_exists(self, path):
        if "/" not in path:
            return path in self.basenames or \
                re.search(r"\b%s\b" % re.escape(path), self.makefiles)
        if path in self.dirs or path in self.files:
            return True
        base = os.path.basename(path)
        # a program or library the build makes from this tree
        for ext in (".c", ".cc", ".in", ".la"):
            if path + ext in self.files:
                return True
        stem = re.sub(r"\.(so|la|a)$", "", base)
        return os.path.dirname(path) in self.dirs and \
            re.search(r"\b%s\b" % re.escape(stem), self.makefiles)

    def check_doc(self, rel):
        text = self.read_doc(rel)
        seen, prev = set(), ""
        for lineno, line in enumerate(text.splitlines(), 1):
            where = "%s:%d" % (rel, lineno)
            # a citation may start on the line before
            external = EXTERNAL.search(prev + " " + line)
            prev = line
            for token in CODE.findall(line):
                if external:
                    break
                for word in re.split(r"[\s,()]+", token):
                    m = re.match(r"^(.*)\.\[([a-z]+)\]$", word)
                    for w in ([m.group(1) + "." + e for e in m.group(2)]
                              if m else [word]):
                        self.check_token(where, w, seen)
            for m in SUITE.finditer(line):
                name = m.group(1)
                if name.split("-")[1] in NOT_SUITE or ("suite", name) in seen:
                    continue
                seen.add(("suite", name))
                if os.path.exists(os.path.join(self.top, "test/suites",
                                               name + ".sh")):
                    self.ok()
                else:
                    self.fail(where, "suite %s: no test/suites/%s.sh" %
                              (name, name))
            for m in VAR.finditer(line):
                name, tail = m.group(1), m.group(2)
                if tail or ("var", name) in seen:
                    continue
                seen.add(("var", name))
                self.check_var(where, name)

    def check_token(self, where, word, seen):
        word = word.strip(".;:'\"")
        func = re.sub(r"\(\)$", "", word)
        if OWN_FUNC.match(func):
            if ("func", func) in seen:
                return
            seen.add(("func", func))
            if re.search(r"\b%s\b" % re.escape(func), self.sources):
                self.ok()
            else:
                self.fail(where, "%s is not in the sources" % func)
            return
        path = self.own_path(word)
        if path is None or ("path", path) in seen:
            return
        seen.add(("path", path))
        if self.path_exists(path):
            self.ok()
        else:
            self.fail(where, "%s does not exist" % path)

    def check_var(self, where, name):
        if name.startswith("UCX_GAUDI_") and self.ucx_vars is not None:
            known = name in self.ucx_vars
        else:
            known = re.search(r"\b%s\b" % re.escape(name), self.sources)
        if known:
            self.ok()
        else:
            self.fail(where, "%s is read by no code" % name)

    # each UCX_GAUDI_* the module defines: one table row in the docs
    def check_var_tables(self, docs):
        if self.ucx_vars is None:
            return
        own = set(re.findall(r'^\s*\{"([A-Z0-9_]+)",', self.sources, re.M))
        rows, groups = {}, []
        for rel in docs:
            for lineno, line in enumerate(self.read_doc(rel).splitlines(),
                                          1):
                m = re.match(r"^\|\s*`(UCX_GAUDI_[A-Z0-9_]+)(_\*)?`", line)
                if m and m.group(2):
                    groups.append(m.group(1) + "_")   # a row for a family
                elif m:
                    rows.setdefault(m.group(1), []).append(
                        "%s:%d" % (rel, lineno))
        for var in sorted(self.ucx_vars):
            field = re.sub(r"^UCX_GAUDI_(COPY_|IPC_)?", "", var)
            if field not in own and not field.startswith("RCACHE"):
                continue     # one of UCX's own iface fields
            where = rows.get(var, [])
            if len(where) == 1 or \
                    (not where and var.startswith(tuple(groups))):
                self.ok()
            elif not where:
                self.fail("docs", "%s has no table row" % var)
            else:
                self.fail("docs", "%s has %d table rows (%s): one is the "
                          "reference" % (var, len(where), ", ".join(where)))

    # each table of figures names its commit and its command
    def check_figures(self, rel):
        if not os.path.exists(os.path.join(self.docs_top, rel)):
            return
        section, start, in_table, rows = [], 0, False, ""
        lines = self.read_doc(rel).splitlines() + [""]
        for lineno, line in enumerate(lines, 1):
            if line.startswith("#"):
                section, start = [], lineno
            section.append(line)
            table = line.startswith("|")
            if in_table and not table and FIGURE.search(rows) and \
                    not rows.startswith("| variable"):
                text = "\n".join(section)
                where = "%s:%d" % (rel, start)
                if not COMMIT.search(text):
                    self.fail(where, "a table of figures without the commit "
                              "it was measured at")
                elif not COMMAND.search(text):
                    self.fail(where, "a table of figures without the command "
                              "that produced it")
                else:
                    self.ok()
            rows = (rows + "\n" + line) if (table and in_table) else \
                (line if table else "")
            in_table = table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--ucx-vars", help="file: `ucx_info -c` output with the "
                    "module loaded")
    ap.add_argument("--docs", help="folder holding the README.md and docs/ "
                    "to check (default: the tree's own; a test of the check)")
    args = ap.parse_args()
    top = os.path.abspath(args.top)
    ucx_vars = None
    if args.ucx_vars:
        with open(args.ucx_vars) as fh:
            ucx_vars = set(re.findall(r"^(UCX_GAUDI_[A-Z0-9_]+)=", fh.read(),
                                      re.M))
    c = Checker(top, ucx_vars)
    c.docs_top = os.path.abspath(args.docs) if args.docs else top
    docs = ["README.md"] + sorted("docs/" + f for f in
                                  os.listdir(os.path.join(c.docs_top, "docs"))
                                  if f.endswith(".md"))
    for rel in docs:
        c.check_doc(rel)
    c.check_var_tables(docs)
    c.check_figures("docs/performance.md")
    for f in c.failures:
        print("STALE " + f)
    print("%d passed, %d failed" % (c.npass, len(c.failures)))
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
