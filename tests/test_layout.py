"""The shape of ``chalicelib``: which room may import which, read from the code itself.

Every import counts, those inside functions too (a lazy import is still a dependency; it
only defers the cost). Imports under ``if TYPE_CHECKING:`` are for type hints and create no
dependency at run time: they are left out.

* ``core`` imports no domain; ``artifacts`` (what every artifact type shares: versions,
  the object store, the job queue, upload-event dispatch) imports only ``core``; ``entry``
  (the Lambda apps) and ``lifecycle`` (the cross-domain cascades and their routes) sit above
  every domain, and nothing imports them but ``entry``: no arrow runs up.
* A domain imports only the domains below it (``LAYERS``), so there is no circle between
  domains, and never another domain's ``store``: it asks that domain's service.
* The registry's own core (``registry/*.py``) does not reach into its sub-rooms
  (``protocol``, ``ingest``, ``publishing``, ``nocode``, ``downloads``); only its routes
  compose them.
* No circle between files at all, and no folder of more than twelve files (a room that
  grows past that splits by concern, as ``core`` did).
* An import by string is an import: ``importlib.import_module("chalicelib.x")``,
  ``__import__`` and a string naming a module (``"chalicelib.x.y"``, ``"chalicelib.x.y:Name"``)
  count as the import they hide, for every rule above; and no import hides behind a string at
  all (wiring goes through typed interfaces, given by the app factory: ``entry.wiring``).
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "chalicelib"

# room -> the rooms it may import (besides itself). Rooms are the top-level packages and
# modules of chalicelib.
LAYERS: dict[str, set[str]] = {
    "core": set(),
    "accounts": {"core"},
    "admin": {"core", "accounts"},
    "projects": {"core", "accounts"},
    "workspaces": {"core", "accounts", "projects"},
    "vcs": {"core", "accounts"},
    "tags": {"core", "accounts", "workspaces"},
    "artifacts": {"core"},
    # The audit trail: the events every domain records with its changes (the accounts' site
    # admins read them all). A domain that records events imports it.
    "audit": {"core", "accounts"},
    # What the registry knows of what it distributes: scans, policy, SBOMs, provenance.
    "trust": {"core", "artifacts", "accounts", "audit"},
    "modules": {"core", "artifacts", "accounts", "vcs", "trust", "audit"},
    # The private provider registry: beside modules, on the same artifacts plumbing.
    "providers": {"core", "artifacts", "accounts", "trust"},
    "meta": {"core"},
    # Air-gapped bundles: modules and providers exported and imported through their services.
    "bundles": {"core", "artifacts", "accounts", "modules", "providers"},
    # Notifications: what the audit trail recorded, told to an organization's destinations
    # and to the consumers of a deprecated version (their teams' members through accounts,
    # mail through admin, the downloads through modules).
    "notifications": {"core", "accounts", "admin", "audit", "modules", "providers"},
    # SCIM provisioning drives users, teams and the site-admin flag through accounts, and
    # reads the SAML settings (SCIM needs SAML) through admin.
    "scim": {"core", "accounts", "admin"},
    # SAML single sign-on: the settings through admin, users and teams through accounts.
    "saml": {"core", "accounts", "admin"},
    # The browser UI reads through the domains' services, as the API does (the site's
    # customization texts through admin), and serves the SAML endpoints, opening the
    # session SAML signs into. Site administration's SCIM page goes through scim's service
    # (settings and tokens), as scim's admin API does. The provider pages read through
    # providers' service; the audit trail's pages read as its API does (audit's reading).
    "web": {
        "audit",
        "core",
        "artifacts",
        "accounts",
        "admin",
        "vcs",
        "modules",
        "providers",
        "saml",
        "scim",
        "trust",
        "notifications",
    },
    "lifecycle": {
        "core",
        "artifacts",
        "accounts",
        "admin",
        "projects",
        "workspaces",
        "vcs",
        "tags",
        "modules",
        # Deleting an organization deletes its providers and GPG keys, and its policy.
        "providers",
        "trust",
        "notifications",
    },
    "entry": {
        "core",
        "lifecycle",
        "accounts",
        "admin",
        "projects",
        "workspaces",
        "vcs",
        "tags",
        "artifacts",
        "modules",
        "providers",
        "meta",
        "web",
        "scim",
        "saml",
        "trust",
        "audit",
        "notifications",
        "bundles",
    },
}
DOMAINS = {"accounts", "admin", "projects", "workspaces", "vcs", "tags", "modules", "meta", "web"}
DOMAINS |= {"scim", "saml", "providers", "trust", "audit", "notifications"}
MODULE_SUB_ROOMS = ("chalicelib.modules.protocol", "chalicelib.modules.ingest")
MODULE_SUB_ROOMS += ("chalicelib.modules.publishing", "chalicelib.modules.nocode")
MODULE_SUB_ROOMS += ("chalicelib.modules.downloads", "chalicelib.modules.scanning")
MODULE_SUB_ROOMS += ("chalicelib.modules.cache",)
MODULE_SUB_ROOMS += ("chalicelib.modules.deadlines",)
# The request bodies of the registry routes nest publishing's vcs-repo body, as the routes do.
MODULE_COMPOSERS = {
    "chalicelib.modules.routes",
    # The core's actions with their sub-rooms' parts (deletes' cascade, VCS branch versions),
    # shared by the API routes and the web UI.
    "chalicelib.modules.composed",
    "chalicelib.modules.schemas",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


# A string naming a chalicelib module (``"chalicelib.x.y"``) or a name in one
# (``"chalicelib.x.y:Name"``): an import by string.
MODULE_STRING = re.compile(r"chalicelib(?:\.\w+)+(?::\w*)?")
IMPORTERS = {"import_module", "__import__"}


def _named_module(text: str) -> str | None:
    """The chalicelib module a string names (the longest known prefix of its path)."""
    parts = text.partition(":")[0].split(".")
    while parts:
        if ".".join(parts) in MODULES:
            return ".".join(parts)
        parts.pop()
    return None


def string_imports(tree: ast.AST) -> list[tuple[str, str | None]]:
    """The imports ``tree`` hides behind strings: (the string, or the call when its argument
    is computed; the module it names, None when it names none or is computed)."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if MODULE_STRING.fullmatch(node.value):
                found.append((node.value, _named_module(node.value)))
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            computed = not (node.args and isinstance(node.args[0], ast.Constant))
            if called in IMPORTERS and computed:
                found.append((ast.unparse(node), None))
    return found


def imports_in(tree: ast.AST, name: str) -> set[str]:
    """The chalicelib modules the code of module ``name`` imports (a package's module when
    one is named), by string too."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("chalicelib")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("chalicelib"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
    found |= {module for _, module in string_imports(tree) if module is not None}
    return {m for m in found if m in MODULES and m != name}


def imports_of(name: str) -> set[str]:
    """The chalicelib modules ``name`` imports."""
    return imports_in(ast.parse(MODULES[name].read_text()), name)


GRAPH = {name: imports_of(name) for name in MODULES}


def room(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "chalicelib"


def edges() -> list[tuple[str, str]]:
    return [(a, b) for a, targets in GRAPH.items() for b in targets]


def test_every_room_is_known() -> None:
    rooms = {room(name) for name in MODULES} - {"chalicelib"}
    assert rooms == set(LAYERS), "a new room needs its place in LAYERS"


def test_rooms_import_only_the_rooms_below_them() -> None:
    wrong = []
    for a, b in edges():
        ra, rb = room(a), room(b)
        if ra == rb or rb == "chalicelib":
            continue
        if rb not in LAYERS[ra]:
            wrong.append(f"{a} -> {b}")
    assert not wrong, wrong


def test_the_layers_themselves_have_no_circle() -> None:
    order: list[str] = []
    remaining = {r: set(deps) for r, deps in LAYERS.items()}
    while remaining:
        ready = [r for r, deps in remaining.items() if deps <= set(order)]
        assert ready, f"circle among {sorted(remaining)}"
        order += sorted(ready)
        for r in ready:
            del remaining[r]


def test_no_domain_reads_another_domains_store() -> None:
    wrong = [
        f"{a} -> {b}"
        for a, b in edges()
        if b.endswith(".store") and room(b) != room(a) and room(a) != "entry"
    ]
    assert not wrong, wrong


def test_core_imports_no_domain() -> None:
    """``chalicelib`` itself (the package: its ``__version__``) is no domain."""
    wrong = [
        f"{a} -> {b}"
        for a, b in edges()
        if room(a) == "core" and room(b) not in ("core", "chalicelib")
    ]
    assert not wrong, wrong


@pytest.mark.parametrize("sub_room", MODULE_SUB_ROOMS)
def test_the_registry_core_does_not_reach_into_its_sub_rooms(sub_room: str) -> None:
    core = [
        name
        for name in MODULES
        if name.startswith("chalicelib.modules.")
        and not name.startswith(MODULE_SUB_ROOMS)
        and name not in MODULE_COMPOSERS
    ]
    wrong = [f"{a} -> {b}" for a in core for b in GRAPH[a] if b.startswith(sub_room)]
    assert not wrong, wrong


def test_no_circle_between_files() -> None:
    """Tarjan's strongly connected components: any component of two or more is a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(GRAPH[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    assert not circles, circles


@pytest.mark.parametrize("rule", ["store", "layers"])
def test_the_checks_see_a_violation(rule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above are not vacuous: a made-up import breaks them."""
    graph = defaultdict(set, {k: set(v) for k, v in GRAPH.items()})
    if rule == "store":
        graph["chalicelib.tags.service"].add("chalicelib.workspaces.store")
        monkeypatch.setattr(sys.modules[__name__], "GRAPH", graph)
        with pytest.raises(AssertionError):
            test_no_domain_reads_another_domains_store()
    else:
        graph["chalicelib.accounts.users.service"].add("chalicelib.modules.service")
        monkeypatch.setattr(sys.modules[__name__], "GRAPH", graph)
        with pytest.raises(AssertionError):
            test_rooms_import_only_the_rooms_below_them()


def hidden_imports(name: str, source: str) -> list[str]:
    """The imports by string in module ``name``'s ``source``, as ``module: string``."""
    return [f"{name}: {text}" for text, _ in string_imports(ast.parse(source))]


def test_no_import_hides_behind_a_string() -> None:
    """What a module uses it imports, where a reader and these rules see it; what a room
    may not import is given to it through a typed interface (``entry.wiring``)."""
    hidden = [h for name, path in MODULES.items() for h in hidden_imports(name, path.read_text())]
    assert not hidden, hidden


@pytest.mark.parametrize(
    "source",
    [
        'importlib.import_module("chalicelib.scim.store").load_settings()',
        '__import__("chalicelib.scim.store")',
        'PROBE = "chalicelib.scim.store:load_settings"',
    ],
)
def test_an_import_by_string_is_an_import(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: accounts loading scim's store by a string breaks the store rule, and
    the string rule sees it, as does a computed ``import_module``."""
    name = "chalicelib.accounts.render"
    assert hidden_imports(name, source)
    assert hidden_imports(name, "importlib.import_module(path)")
    graph = defaultdict(set, {k: set(v) for k, v in GRAPH.items()})
    graph[name] |= imports_in(ast.parse(source), name)
    monkeypatch.setattr(sys.modules[__name__], "GRAPH", graph)
    with pytest.raises(AssertionError):
        test_no_domain_reads_another_domains_store()


MAX_FILES_PER_FOLDER = 12
MAX_LINES = 600


def test_no_file_passes_six_hundred_lines() -> None:
    """A file past that splits by concern, as its room would."""
    long = {
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert not long, sorted(long)


def test_no_folder_holds_more_than_twelve_files() -> None:
    """Counted as a newcomer sees them: Python files other than ``__init__.py``."""
    crowded = {}
    for folder in [PACKAGE, *[p for p in PACKAGE.rglob("*") if p.is_dir()]]:
        files = [f for f in folder.glob("*.py") if f.name != "__init__.py"]
        if len(files) > MAX_FILES_PER_FOLDER:
            crowded[str(folder.relative_to(ROOT))] = len(files)
    assert not crowded, crowded


# A model's reads (``get``, ``query``, ``scan``, ``count``, ``batch_get``, on the model or
# one of its indexes) live in its room's store, or beside the model in the one module that
# defines it (core's tokens and kept counts); a store's one-time backfills (``backfill.py``
# beside it) are the store's too.
MODEL_READS = {"get", "query", "scan", "count", "batch_get"}


def _model_of(node: ast.expr) -> str | None:
    """``FooModel`` of ``FooModel``, ``store.FooModel`` or ``FooModel.by_index``."""
    if isinstance(node, ast.Name):
        return node.id if node.id.endswith("Model") else None
    if isinstance(node, ast.Attribute):
        return node.attr if node.attr.endswith("Model") else _model_of(node.value)
    return None


def model_reads(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {model}.{node.func.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MODEL_READS
        and (model := _model_of(node.func.value)) is not None
        and model not in own
    ]


def test_models_are_read_in_their_stores() -> None:
    wrong = [
        read
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("store.py", "backfill.py")
        and "store" not in path.relative_to(PACKAGE).parts[:-1]
        for read in model_reads(path)
    ]
    assert not wrong, wrong
