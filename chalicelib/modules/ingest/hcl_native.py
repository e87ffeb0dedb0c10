"""The HCL native syntax (``.tf``, ``.tofu``) read with tree-sitter: syntax, nesting and
escapes checked, then each file's declarations handed to a ``declarations.Collector``.

Parser choice: tree-sitter with the tree-sitter-hcl grammar.  Measured with
``bench/ingest_bench.py`` (a generated VPC-shaped module: 73 .tf files, 248 KB of HCL;
median of 5 runs on a shared, noisy 2-vCPU box): ``parse_module`` with tree-sitter takes
160-190 ms, of which ~85% is the tree-sitter parse itself; python-hcl2 8.1.4 needs 2.2-3.1 s
just for ``hcl2.loads`` of the same files (13-20x slower), plus ~0.5 s on its first call to
build its Lark parser.  Fidelity is adequate: on the benchmark module both find exactly the
same variables, outputs, resources and module sources; python-hcl2 8 returns heredocs and
strings as raw source (quotes included), whereas we need evaluated descriptions but *source
text* for ``type``/``default``, which tree-sitter gives directly as byte ranges.  Syntax
errors show up as ERROR/MISSING nodes.  Known gap: the grammar is a little more lenient than
Terraform (e.g. two attributes on one line parse), so a few invalid files are accepted.

Import is cheap (~1.5 ms with cached bytecode, measured with ``python -X importtime``):
tree_sitter and the grammar are only imported on the first parse (~2 ms then).

Escapes: a file Terraform refuses is refused here, with its file and line. In a quoted
string (not a heredoc, not a comment) Terraform 1.11 takes ``\\n \\r \\t \\" \\\\``,
``\\uNNNN`` and ``\\UNNNNNNNN`` naming a character UTF-8 can encode (not a surrogate, not past
U+10FFFF), and ``$${``/``%%{`` for a literal ``${``/``%{``; every other backslash is its
"Invalid escape sequence" error (``tests/unit/test_hcl_parse.py`` holds the table, checked
against ``terraform validate``). The grammar already refuses most of them, as a bare syntax
error; the ones it takes (``\\uD800``, ``\\UFFFFFFFF``) are found in the parsed tree, and for a
file the grammar refuses, a small lexer looks for a bad escape first so the reason names it.
"""

from __future__ import annotations

import re
import time
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from chalicelib.modules.ingest.declarations import Collector, HclError, decode

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser

# CPU-time budget per file, so throttled CPUs (small Lambdas) do not cause false timeouts,
# while pathological inputs (deeply nested unclosed templates) are cut off quickly.
_PARSE_BUDGET_BASE = 0.25
_PARSE_BUDGET_PER_MB = 2.5
# Bound the walk to the first syntax error in absurdly deep trees.
_MAX_ERROR_WALK = 20_000
_CLOSERS = frozenset({"}", "]", ")", '"', "quoted_template_end", "heredoc_identifier"})
# Tree nodes that are one level of nesting as a reader sees it.
_NESTING = frozenset(
    {"block", "expression", "operation", "template_interpolation", "template_directive"}
)


@lru_cache(maxsize=1)
def _language() -> Language:
    import tree_sitter_hcl
    from tree_sitter import Language

    return Language(tree_sitter_hcl.language())


def new_parser() -> Parser:
    from tree_sitter import Parser

    return Parser(_language())


def _parse(parser: Parser, path: str, src: bytes, max_depth: int) -> Node:
    deadline = time.thread_time() + _PARSE_BUDGET_BASE + _PARSE_BUDGET_PER_MB * len(src) / 1e6

    def read(offset: int, _point: object) -> bytes:
        return src[offset : offset + 65536]

    def progress(_offset: int, _has_error: bool) -> bool:
        return time.thread_time() > deadline

    try:
        tree = parser.parse(read, progress_callback=progress)
    except ValueError:  # cancelled by the progress callback
        parser.reset()
        raise HclError(f"{path}: file is too complex to parse") from None
    root = tree.root_node
    if root.has_error:
        bad = _bad_escape_in_source(src)
        if bad is not None:
            raise HclError(f"{path}:{_line(src, bad[0])}: {bad[1]}")
        raise HclError(_describe_error(path, src, root))
    _check_depth(path, root, max_depth)
    _check_escapes(path, src, root)
    return root


# One escape of a quoted string: the selector and what a \\u or \\U escape needs after it.
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)?", re.DOTALL)
_VALID_ESCAPES = '\\n \\r \\t \\" \\\\ \\uNNNN \\UNNNNNNNN'


def _line(src: bytes, offset: int) -> int:
    return src.count(b"\n", 0, offset) + 1


def _escape_problem(literal: str) -> tuple[int, str] | None:
    """The first escape of a quoted string's literal text that Terraform refuses: its
    character offset and why; None when every escape is valid."""
    for match in _ESCAPE.finditer(literal):
        escape = match.group(1)
        if escape is None:
            return match.start(), "invalid escape sequence: a backslash ends the string"
        shown = escape if escape.isprintable() else f"U+{ord(escape):04X}"
        if len(escape) > 1:
            code = int(escape[1:], 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                what = "a surrogate" if code <= 0xDFFF else "past U+10FFFF"
                return match.start(), (
                    f'invalid escape sequence "\\{escape}": U+{code:04X} is {what}, not a '
                    "character UTF-8 can encode"
                )
        elif escape in "uU":
            count = 4 if escape == "u" else 8
            after = literal[match.end() : match.end() + count]
            return match.start(), (
                f'invalid escape sequence "\\{escape}{after}": \\{escape} must be followed by '
                f"{'four' if count == 4 else 'eight'} hexadecimal digits"
            )
        elif escape not in _SIMPLE_ESCAPES:
            return match.start(), (
                f'invalid escape sequence "\\{shown}": a quoted string\'s escapes are '
                f"{_VALID_ESCAPES} (\\\\ for a backslash; heredocs take none)"
            )
    return None


def _quoted_literal(node: Node) -> bool:
    """Whether a template_literal belongs to a quoted string (escapes apply) rather than to
    a heredoc (they do not)."""
    parent = node.parent
    while parent is not None:
        if parent.type in ("quoted_template", "string_lit"):
            return True
        if parent.type == "heredoc_template":
            return False
        parent = parent.parent
    return False


def _check_escapes(path: str, src: bytes, root: Node) -> None:
    """Refuse an escape the grammar took but Terraform refuses (``\\uD800``). Only the
    literals that hold a backslash are looked at, each once: a file without one costs a
    ``find``. So does one without ``\\u``/``\\U``: the grammar refuses every other bad
    selector itself (the table in test_hcl_parse.py holds it to that)."""
    if b"\\u" not in src and b"\\U" not in src:
        return
    pos = src.find(b"\\")
    while pos >= 0:
        leaf = root.descendant_for_byte_range(pos, pos + 1)
        if leaf is None or leaf.end_byte <= pos:
            pos = src.find(b"\\", pos + 1)
            continue
        if leaf.type == "template_literal" and _quoted_literal(leaf):
            text = src[leaf.start_byte : leaf.end_byte].decode("utf-8")
            problem = _escape_problem(text)
            if problem is not None:
                at = leaf.start_byte + len(text[: problem[0]].encode("utf-8"))
                raise HclError(f"{path}:{_line(src, at)}: {problem[1]}")
        pos = src.find(b"\\", leaf.end_byte)


# A file the grammar refused, read as Terraform's lexer would, for quoted strings only.
_CODE_TOKEN = re.compile(
    rb'#[^\n]*|//[^\n]*|/\*.*?(?:\*/|\Z)|<<-?([A-Za-z_][\w-]*)[ \t]*\r?\n|"|\{|\}', re.DOTALL
)
_STRING_CHUNK = re.compile(rb"(?:\\.?|\$\$\{|%%\{|[$%](?!\{)|[^\"\\\n$%])*", re.DOTALL)


def _bad_escape_in_source(src: bytes) -> tuple[int, str] | None:
    """For a file the grammar refused: the byte offset and reason of the first invalid
    escape in a quoted string, if there is one, so the error names it rather than where
    error recovery gave up (``"\\q"`` is a syntax error to the grammar). Comments and
    heredocs are skipped; interpolations (``${ ... }``, ``%{ ... }``) nest, with strings
    inside. Stops at anything it cannot follow: the caller then reports the syntax error."""
    if b"\\" not in src:
        return None
    depths: list[int] = []  # brace depth of each open interpolation
    pos, end, in_string = 0, len(src), False
    while pos < end:
        if in_string:
            chunk_end = _STRING_CHUNK.match(src, pos).end()  # type: ignore[union-attr]
            text = src[pos:chunk_end].decode("utf-8", "replace")
            problem = _escape_problem(text)
            if problem is not None:
                return pos + len(text[: problem[0]].encode("utf-8")), problem[1]
            closer = src[chunk_end : chunk_end + 2]
            if closer[:1] == b'"':
                in_string, pos = False, chunk_end + 1
            elif closer in (b"${", b"%{"):
                depths.append(1)
                in_string, pos = False, chunk_end + 2
            else:  # a newline or the end: the string is not closed
                return None
            continue
        token = _CODE_TOKEN.search(src, pos)
        if token is None:
            return None
        pos = token.end()
        lexeme = token.group(0)
        if lexeme == b'"':
            in_string = True
        elif token.group(1):  # a heredoc: skip to its closing line
            closing = re.compile(rb"^[ \t]*" + re.escape(token.group(1)) + rb"[ \t]*\r?$", re.M)
            found = closing.search(src, pos)
            if found is None:
                return None
            pos = found.end()
        elif depths and lexeme == b"{":
            depths[-1] += 1
        elif depths and lexeme == b"}":
            depths[-1] -= 1
            if not depths[-1]:
                depths.pop()
                in_string = True
    return None


def _check_depth(path: str, root: Node, limit: int) -> None:
    """Refuse more than ``limit`` levels of blocks, expressions, operators, interpolations.

    A subtree cannot nest deeper than it has nodes (``descendant_count`` counts them, the
    node itself included), so only subtrees big enough to break the limit are walked.
    """
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if node.type in _NESTING:
            depth += 1
            if depth > limit:
                raise HclError(
                    f"{path}:{node.start_point[0] + 1}: nested more than {limit} levels deep "
                    "(blocks, brackets, function calls, operators and interpolations count)"
                )
        stack.extend((c, depth) for c in node.children if depth + c.descendant_count > limit)


def _describe_error(path: str, src: bytes, root: Node) -> str:
    node = root
    for _ in range(_MAX_ERROR_WALK):
        if node.is_error or node.is_missing:
            break
        child = next((c for c in node.children if c.has_error or c.is_missing), None)
        if child is None:
            break
        node = child
    line = node.start_point[0] + 1
    if node.is_missing and node.type not in _CLOSERS:
        # Error recovery sometimes "inserts" odd tokens (e.g. '<<' for "a = = 2"); naming
        # them would confuse, so show the source where it happened instead.
        line_end = src.find(b"\n", node.start_byte)
        rest = src[node.start_byte : line_end if line_end >= 0 else len(src)].strip()
        if rest:
            return f"{path}:{line}: syntax error near {rest.decode('utf-8', 'replace')[:40]!r}"
    if node.is_missing:
        content_end = len(src.rstrip())
        at_end = node.start_byte >= content_end
        if at_end:  # report the last line with content, not the empty line after it
            line = src.count(b"\n", 0, content_end) + 1
        eof = "unexpected end of file, " if at_end else ""
        message = f"{path}:{line}: syntax error: {eof}missing {node.type!r}"
        opener = node.parent.parent if node.parent is not None else None
        if node.type == "}" and opener is not None and opener.type in ("block", "object"):
            message += f" to close the {opener.type} opened at line {opener.start_point[0] + 1}"
        return message
    snippet = src[node.start_byte : node.end_byte].decode("utf-8", "replace").strip()
    snippet = snippet.splitlines()[0][:40] if snippet else ""
    if not snippet:
        return f"{path}:{line}: syntax error"
    return f"{path}:{line}: syntax error near {snippet!r}"


def _text(src: bytes, node: Node) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8")


def _inner(expr: Node) -> Node:
    """The meaningful child of an ``expression`` node (skipping comments)."""
    node = expr
    while node.type in ("expression", "literal_value", "template_expr"):
        child = next((c for c in node.named_children if c.type != "comment"), None)
        if child is None:
            break
        node = child
    return node


_ESCAPES = re.compile(r"\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)|\$\$\{|%%\{", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _unescape(raw: str) -> str:
    def sub(match: re.Match[str]) -> str:
        text = match.group(0)
        if text == "$${":
            return "${"
        if text == "%%{":
            return "%{"
        esc = match.group(1)
        if esc[0] in "uU" and len(esc) > 1:
            code = int(esc[1:], 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                return "\ufffd"  # refused by _check_escapes first; never crash chr
            return chr(code)
        return _SIMPLE_ESCAPES.get(esc, text)

    return _ESCAPES.sub(sub, raw)


def _string_value(src: bytes, expr: Node | None) -> str | None:
    """Value of a string literal, quoted template or heredoc; None for anything else.

    Interpolations are kept as their source text (``${var.x}``).
    """
    if expr is None:
        return None
    node = _inner(expr)
    if node.type in ("string_lit", "quoted_template"):
        return _unescape(src[node.start_byte + 1 : node.end_byte - 1].decode("utf-8"))
    if node.type == "heredoc_template":
        return _heredoc_value(src, node)
    return None


def _heredoc_value(src: bytes, node: Node) -> str:
    children = node.children
    flush = children[0].type == "heredoc_start" and _text(src, children[0]) == "<<-"
    idents = [c for c in children if c.type == "heredoc_identifier"]
    start = src.find(b"\n", idents[0].end_byte) + 1
    end = src.rfind(b"\n", 0, idents[-1].start_byte) + 1 if len(idents) > 1 else node.end_byte
    body = src[start:end].decode("utf-8").replace("\r\n", "\n") if start and end > start else ""
    if flush:
        lines = body.split("\n")
        indents = [len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip()]
        cut = min(indents, default=0)
        body = "\n".join(ln[cut:] for ln in lines)
    return body.replace("$${", "${").replace("%%{", "%{")


def _bool_value(src: bytes, expr: Node | None) -> bool | None:
    if expr is None:
        return None
    node = _inner(expr)
    if node.type == "bool_lit":
        return _text(src, node) == "true"
    return None


_TYPE_TOKENS = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|//[^\n]*|/\*.*?\*/|\s+|[^"#/\s]+|.', re.DOTALL
)


def _type_text(src: bytes, expr: Node) -> str:
    """Type expression source on one line: comments dropped, whitespace collapsed.

    Newlines that separate object attributes become ", " so the result stays valid HCL:
    ``object({ a = string, b = number })``.
    """
    out: list[str] = []
    pending = ""  # whitespace seen since the last token: "", " " or "\n"
    for match in _TYPE_TOKENS.finditer(_text(src, expr)):
        token = match.group(0)
        if token[0].isspace() or token.startswith(("#", "//", "/*")):
            if pending != "\n":
                pending = "\n" if "\n" in token or token[0] in "#/" else " "
            continue
        if pending and out:
            prev, nxt = out[-1][-1], token[0]
            if pending == "\n" and prev not in "{([,=" and nxt not in "})],":
                out.append(", ")
            elif prev not in "([" and nxt not in ")],":
                out.append(" ")
        out.append(token)
        pending = ""
    return "".join(out)


def _default_text(src: bytes, attribute: Node, expr: Node) -> str:
    """Default expression source, continuation lines dedented by the attribute's indent."""
    text = _text(src, expr).replace("\r\n", "\n")
    if "\n" not in text:
        return text
    line_start = src.rfind(b"\n", 0, attribute.start_byte) + 1
    indent = src[line_start : attribute.start_byte].decode("utf-8")
    if indent.strip():  # attribute does not start its line; leave as is
        return text
    first, *rest = text.split("\n")
    if indent and all(ln.startswith(indent) or not ln.strip() for ln in rest):
        rest = [ln[len(indent) :] for ln in rest]
    return "\n".join([first, *rest])


def _block_parts(src: bytes, block: Node) -> tuple[str, list[str], Node | None]:
    kind = ""
    labels: list[str] = []
    body = None
    for child in block.named_children:
        ctype = child.type
        if ctype == "identifier":
            if kind:
                labels.append(_text(src, child))
            else:
                kind = _text(src, child)
        elif ctype == "string_lit":
            labels.append(_unescape(src[child.start_byte + 1 : child.end_byte - 1].decode()))
        elif ctype == "body":
            body = child
    return kind, labels, body


def _body_items(src: bytes, body: Node | None) -> tuple[dict[str, tuple[Node, Node]], list[Node]]:
    """Attributes as name -> (attribute node, expression node), plus nested blocks."""
    attrs: dict[str, tuple[Node, Node]] = {}
    blocks: list[Node] = []
    if body is None:
        return attrs, blocks
    for child in body.named_children:
        if child.type == "attribute":
            named = [c for c in child.named_children if c.type != "comment"]
            if len(named) >= 2:
                attrs.setdefault(_text(src, named[0]), (child, named[-1]))
        elif child.type == "block":
            blocks.append(child)
    return attrs, blocks


def _expr(attrs: dict[str, tuple[Node, Node]], name: str) -> Node | None:
    item = attrs.get(name)
    return item[1] if item else None


def _object_items(src: bytes, expr: Node) -> dict[str, Node] | None:
    """Key -> value expression of an object constructor expression, or None."""
    node = _inner(expr)
    if node.type == "collection_value":
        node = node.named_children[0] if node.named_child_count else node
    if node.type != "object":
        return None
    items: dict[str, Node] = {}
    for elem in node.named_children:
        if elem.type != "object_elem":
            continue
        key, val = elem.child_by_field_name("key"), elem.child_by_field_name("val")
        if key is None or val is None:
            continue
        name = _string_value(src, key)
        if name is None:
            name = _text(src, key).strip()
        items[name] = val
    return items


def collect(path: str, content: bytes, parser: Parser, out: Collector, max_depth: int) -> None:
    src = decode(path, content)
    root = _parse(parser, path, src, max_depth)
    for body in root.named_children:
        if body.type != "body":
            continue
        for block in body.named_children:
            if block.type != "block":
                continue
            kind, labels, inner = _block_parts(src, block)
            if kind == "terraform":
                _collect_terraform_block(src, inner, out)
                continue
            if not labels:
                continue
            attrs, _ = _body_items(src, inner)
            if kind == "variable":
                fields: dict[str, Any] = {}
                if "type" in attrs:
                    fields["type"] = _type_text(src, attrs["type"][1])
                if "description" in attrs:
                    fields["description"] = _string_value(src, attrs["description"][1]) or ""
                if "default" in attrs:
                    fields["default"] = _default_text(src, *attrs["default"])
                out.variable(labels[0], fields)
            elif kind == "output":
                fields = {}
                if "description" in attrs:
                    fields["description"] = _string_value(src, attrs["description"][1]) or ""
                if "sensitive" in attrs:
                    fields["sensitive"] = bool(_bool_value(src, attrs["sensitive"][1]))
                out.output(labels[0], fields)
            elif kind == "module":
                fields = {}
                for key in ("source", "version"):
                    value = _string_value(src, _expr(attrs, key))
                    if value is not None:
                        fields[key] = value
                out.module(labels[0], fields)
            elif kind in ("resource", "data") and len(labels) >= 2:
                provider = _expr(attrs, "provider")
                out.resource(
                    labels[0],
                    labels[1],
                    _text(src, provider) if provider is not None else None,
                    managed=kind == "resource",
                )
            elif kind == "provider":
                out.provider_block(labels[0], _string_value(src, _expr(attrs, "version")))


def _collect_terraform_block(src: bytes, body: Node | None, out: Collector) -> None:
    attrs, blocks = _body_items(src, body)
    out.required_core(_string_value(src, _expr(attrs, "required_version")))
    for block in blocks:
        kind, _, inner = _block_parts(src, block)
        if kind != "required_providers":
            continue
        attrs, _ = _body_items(src, inner)
        for name, (_, expr) in attrs.items():
            legacy = _string_value(src, expr)
            if legacy is not None:
                out.required_provider(name, None, legacy)
                continue
            items = _object_items(src, expr) or {}
            source = items.get("source")
            version = items.get("version")
            out.required_provider(
                name,
                _string_value(src, source) if source is not None else None,
                _string_value(src, version) if version is not None else None,
            )
