"""Every documented walkthrough runs exactly as written against the real local stack, so the
docs cannot drift from what the registry does.

A walkthrough is the shell blocks marked in README.md or any page under docs/ with an HTML
comment (invisible on GitHub and in the built site) on the line before the block's fence::

    <!-- walkthrough: providers after modules -->
    ```sh
    ...
    ```

``providers`` names the walkthrough (its blocks run in the order of the files' sorted paths,
then of the page), ``after modules`` says it uses what the ``modules`` walkthrough made on the
stack (its organization), and ``needs terraform`` marks a block that runs the real
``terraform`` binary. Each walkthrough's blocks are concatenated, unchanged, into one script
run by ``bash -euo pipefail`` in an empty directory, with only what a reader of ``make run``'s
output has: ``URL`` (the address it prints after "listening on") and ``TOKEN`` (the site
admin's token it prints), besides ``PATH``, a ``HOME`` and ``TMPDIR`` of its own and
``CHECKPOINT_DISABLE`` (terraform's version check, which would reach the internet). Without
``terraform`` on the PATH a walkthrough runs up to its first terraform block and is then
reported as skipped, naming that block. A failure names the file, line and text of the
failing block and shows everything the script printed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.e2e.conftest import ADMIN_TOKEN, Stack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- walkthrough: ([a-z0-9-]+)((?: [a-z]+ [a-z0-9-]+)*) -->$")
FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
# The first line of every script: where it stopped, for the failure message.
TRAP = "trap 'echo \"walkthrough stopped at script line $LINENO\" >&2' ERR\n"


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    text: str
    needs: set[str]

    def where(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}"


@dataclass
class Walkthrough:
    name: str
    after: str = ""
    blocks: list[Block] = field(default_factory=list)


def doc_files(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def walkthroughs(files: list[Path]) -> dict[str, Walkthrough]:
    """The marked blocks of ``files``, by walkthrough, in order."""
    found: dict[str, Walkthrough] = {}
    for path in files:
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            marked = MARKER.match(line.strip())
            if not marked:
                continue
            fence = number + 1
            if fence >= len(lines) or not FENCE.match(lines[fence]):
                raise AssertionError(f"{path}:{number + 1}: a walkthrough marker not on a sh block")
            end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
            words = marked.group(2).split()
            options = dict(zip(words[::2], words[1::2], strict=True))
            walk = found.setdefault(marked.group(1), Walkthrough(marked.group(1)))
            walk.after = options.get("after", walk.after)
            needs = {options["needs"]} if "needs" in options else set()
            text = "\n".join(lines[fence + 1 : end]) + "\n"
            walk.blocks.append(Block(path, fence + 1, text, needs))
    return found


@dataclass
class Outcome:
    ok: bool
    message: str
    seconds: float
    skipped: str = ""


def script(blocks: list[Block]) -> tuple[str, list[tuple[int, Block]]]:
    """The blocks as one script (the trap line first), and the script line each starts at."""
    text, starts = TRAP, []
    for block in blocks:
        starts.append((text.count("\n") + 1, block))
        text += block.text
    return text, starts


def run(walk: Walkthrough, stack: Stack, workdir: Path) -> Outcome:
    blocks, skipped = walk.blocks, ""
    for index, block in enumerate(walk.blocks):
        missing = sorted(tool for tool in block.needs if shutil.which(tool) is None)
        if missing:
            blocks = walk.blocks[:index]
            skipped = f"{block.where()} needs {', '.join(missing)}, not on PATH"
            break
    text, starts = script(blocks)
    workdir.mkdir(parents=True)
    home, temporary = workdir / "home", workdir / "tmp"
    home.mkdir()
    temporary.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CHECKPOINT_DISABLE": "1",
        "TMPDIR": str(temporary),  # mktemp's directories, where stop_gpg_agents finds them
        "URL": stack.url,  # "Registry (self-hosted) listening on <URL>"
        "TOKEN": ADMIN_TOKEN,  # "site admin 'admin' token (shown once): <TOKEN>"
    }
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", text, f"walkthrough-{walk.name}"],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    seconds = time.monotonic() - started
    stop_gpg_agents(temporary)
    if done.returncode == 0:
        return Outcome(True, done.stdout, seconds, skipped)
    stopped = re.findall(r"stopped at script line (\d+)", done.stdout) or re.findall(
        rf"walkthrough-{walk.name}: line (\d+)", done.stdout
    )
    line = int(stopped[-1]) if stopped else 0
    failing = [block for start, block in starts if start <= line]
    block = failing[-1] if failing else blocks[-1]
    message = (
        f"walkthrough {walk.name!r} failed (exit {done.returncode}) in the block at"
        f" {block.where()}:\n{block.text}\n----- what it printed -----\n{done.stdout}"
    )
    return Outcome(False, message, seconds)


def stop_gpg_agents(temporary: Path) -> None:
    """The agent a throwaway GNUPGHOME (``mktemp -d``) started, even when the walkthrough
    stopped before its own ``gpgconf --kill``: a test leaves no daemon behind."""
    gpgconf = shutil.which("gpgconf")
    for keyring in temporary.glob("*/pubring.kbx"):
        if gpgconf:
            env = {"PATH": os.environ["PATH"], "GNUPGHOME": str(keyring.parent)}
            subprocess.run([gpgconf, "--kill", "gpg-agent"], env=env, timeout=30, check=False)


FOUND = walkthroughs(doc_files())


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, Outcome]]:
    """Each walkthrough's outcome, run once (a walkthrough ``after`` another runs it first)."""
    ran: dict[str, Outcome] = {}
    yield ran
    for name, outcome in ran.items():
        print(f"walkthrough {name}: {outcome.seconds:.1f} s")


def outcome_of(name: str, ran: dict[str, Outcome], stack: Stack, base: Path) -> Outcome:
    if name not in ran:
        walk = FOUND[name]
        if walk.after:
            before = outcome_of(walk.after, ran, stack, base)
            if not before.ok:
                ran[name] = Outcome(False, f"needs {walk.after!r}, which failed", 0.0)
                return ran[name]
        ran[name] = run(walk, stack, base / name)
    return ran[name]


def test_the_docs_mark_their_walkthroughs() -> None:
    assert {"modules", "providers", "people", "projects"} <= set(FOUND), sorted(FOUND)
    for walk in FOUND.values():
        assert not walk.after or walk.after in FOUND, f"{walk.name} after unknown {walk.after}"


@pytest.mark.parametrize("name", sorted(FOUND, key=lambda n: (bool(FOUND[n].after), n)))
def test_walkthrough_runs_verbatim(
    name: str, stack: Stack, outcomes: dict[str, Outcome], tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = tmp_path_factory.getbasetemp() / "walkthroughs"
    outcome = outcome_of(name, outcomes, stack, base)
    assert outcome.ok, outcome.message
    if outcome.skipped:
        pytest.skip(f"ran {name} up to the block at {outcome.skipped}")


def test_a_failing_block_is_named_with_what_it_printed(stack: Stack, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- walkthrough: broken -->\n```sh\necho first\n```\n\ntext\n\n"
        "<!-- walkthrough: broken -->\n```sh\n"
        'curl -sS --fail-with-body -H "Authorization: Bearer $TOKEN"'
        " $URL/api/v2/organizations/nope\n"
        "echo never\n```\n"
    )
    (walk,) = walkthroughs([page]).values()
    outcome = run(walk, stack, tmp_path / "run")
    assert not outcome.ok
    assert f"{page}:9" in outcome.message  # the second block's fence
    assert "first" in outcome.message and "404" in outcome.message
    assert "never" not in outcome.message.split("-----")[-1]


def test_a_block_needing_a_missing_tool_is_reported_not_rewritten(
    stack: Stack, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- walkthrough: tools -->\n```sh\necho ran > ran.txt\n```\n"
        "<!-- walkthrough: tools needs no-such-tool-here -->\n```sh\nno-such-tool-here\n```\n"
    )
    (walk,) = walkthroughs([page]).values()
    outcome = run(walk, stack, tmp_path / "run")
    assert outcome.ok and (tmp_path / "run" / "ran.txt").read_text() == "ran\n"
    assert outcome.skipped == f"{page}:6 needs no-such-tool-here, not on PATH"


def test_field_stops_with_the_apis_error_not_a_traceback(stack: Stack, tmp_path: Path) -> None:
    """The docs' ``field`` helper, as the providers page defines it, given the API's 404."""
    first = FOUND["providers"].blocks[0].text
    definitions = first[: first.index("\n\n")]  # API, H and field
    page = tmp_path / "page.md"
    page.write_text(
        f"<!-- walkthrough: refused -->\n```sh\n{definitions}\n"
        'curl "${H[@]}" $URL/api/v2/organizations/nope/teams'
        ' -d \'{"data":{"type":"teams","attributes":{"name":"ci"}}}\''
        " | field data.id\n```\n"
    )
    (walk,) = walkthroughs([page]).values()
    outcome = run(walk, stack, tmp_path / "run")
    assert not outcome.ok
    printed = outcome.message.split("-----")[-1]
    assert "error: the API answered" in printed and '"status": "404"' in printed, printed
    assert "Traceback" not in printed
