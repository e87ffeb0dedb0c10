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
output has, read from what the stack printed as ``make run`` prints it: ``URL`` (the address
after "listening on"), ``TOKEN`` (the site admin's token), ``HTTPS_HOST`` (the "terraform
host:" line) and ``SSL_CERT_FILE`` (the "terraform trusts it after: export SSL_CERT_FILE=..."
line, pasted), besides ``PATH``, a ``HOME`` and ``TMPDIR`` of its own and
``CHECKPOINT_DISABLE`` (terraform's version check, which would reach the internet). Without
``terraform`` on the PATH a walkthrough runs up to its first terraform block and is then
reported as skipped, naming that block. A failure names the file, line and text of the
failing block and shows everything the script printed.

``answers login`` marks a block that runs ``terraform login``: the test answers its "yes"
on stdin and, where the reader's browser would open, approves in headless Chromium (signed in
with the site admin's token). A walkthrough that continues as another person gets what that
person would have from a browser (``READER`` below: Jane's token after she accepts the
invitation the ``people`` walkthrough printed).

Every other shell block of the docs says why it is not run, in a ``<!-- not run: REASON -->``
comment on the line before its fence (it needs AWS, a third party, or it sets the variables
the test sets), so that no block is left out by accident."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.conftest import ADMIN_TOKEN, Stack
from tests.e2e.pages import TIMEOUT_MS
from tests.e2e.test_invitations_e2e import PASSWORD, SESSION, Visitor
from tests.e2e.test_terraform_login import LAUNCHER, approve_on

if TYPE_CHECKING:
    from playwright.sync_api import Browser

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- walkthrough: ([a-z0-9-]+)((?: [a-z]+ [a-z0-9-]+)*) -->$")
FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
NOT_RUN = re.compile(r"^<!-- not run: \S.* -->$")
# The lines of make run's output a reader copies, by the variable the docs give each.
PRINTED = {
    "URL": re.compile(r"listening on (\S+)"),
    "HTTPS_HOST": re.compile(r"terraform host: (\S+)"),
    "SSL_CERT_FILE": re.compile(r"terraform trusts it after: export SSL_CERT_FILE=(\S+)"),
}
# The first line of every script: where it stopped, for the failure message.
TRAP = "trap 'echo \"walkthrough stopped at script line $LINENO\" >&2' ERR\n"


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    text: str
    needs: set[str]
    answers: str = ""  # "login": it runs terraform login, which a browser answers

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
            walk.blocks.append(Block(path, fence + 1, text, needs, options.get("answers", "")))
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


def printed(stack: Stack) -> dict[str, str]:
    """The variables a reader sets from ``make run``'s output (``PRINTED``), and ``TOKEN``:
    the stack runs with ``REGISTRY_ADMIN_TOKEN``, so it says so instead of printing one."""
    values = {"TOKEN": ADMIN_TOKEN}  # "site admin 'admin' token (shown once): <TOKEN>"
    for name, line in PRINTED.items():
        found = line.search(stack.startup)
        assert found, f"the stack printed no line for {name}:\n{stack.startup}"
        values[name] = found.group(1)
    return values


# Where the reader's browser opens when terraform login asks it to: a URL and then done.
Approve = Callable[[str], None]


def run(
    walk: Walkthrough,
    stack: Stack,
    workdir: Path,
    reader: dict[str, str] | None = None,
    approve: Approve | None = None,
) -> Outcome:
    """Run ``walk``'s blocks (up to the first needing a missing tool) in ``workdir`` with
    what ``make run`` printed and ``reader`` (what the reader got elsewhere, by variable);
    ``approve`` answers terraform login's browser."""
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
        **printed(stack),
        **(reader or {}),
    }
    opened = workdir / "browser-opened"
    logins = any(block.answers == "login" for block in blocks)
    if logins:  # the reader's browser: it notes the URL terraform opens, for ``approve``
        browsers = workdir / "browser"
        browsers.mkdir()
        launcher = browsers / "open-url"
        launcher.write_text(LAUNCHER.format(target=opened))
        launcher.chmod(0o755)
        for name in ("xdg-open", "x-www-browser", "www-browser"):
            (browsers / name).symlink_to(launcher)
        env["PATH"] = f"{browsers}{os.pathsep}{env['PATH']}"
        env["BROWSER"] = str(launcher)
    log = workdir / "printed.txt"
    started = time.monotonic()
    with log.open("w") as output:
        process = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", text, f"walkthrough-{walk.name}"],
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE,
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            assert process.stdin is not None
            process.stdin.write("yes\n" if logins else "")  # terraform login: "Enter a value:"
            process.stdin.close()
            while logins and process.poll() is None and time.monotonic() - started < 300:
                if opened.exists():
                    assert approve is not None, f"{walk.name} opens a browser: give approve"
                    approve(opened.read_text())
                    opened.unlink()
                time.sleep(0.1)
            process.wait(timeout=max(1.0, 300 - (time.monotonic() - started)))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    seconds = time.monotonic() - started
    stop_gpg_agents(temporary)
    stdout = log.read_text()
    if process.returncode == 0:
        return Outcome(True, stdout, seconds, skipped)
    stopped = re.findall(r"stopped at script line (\d+)", stdout) or re.findall(
        rf"walkthrough-{walk.name}: line (\d+)", stdout
    )
    line = int(stopped[-1]) if stopped else 0
    failing = [block for start, block in starts if start <= line]
    block = failing[-1] if failing else blocks[-1]
    message = (
        f"walkthrough {walk.name!r} failed (exit {process.returncode}) in the block at"
        f" {block.where()}:\n{block.text}\n----- what it printed -----\n{stdout}"
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


def janes_browser(stack: Stack, people: Outcome) -> dict[str, str]:
    """What Jane has once she followed her invitation (the link the ``people`` walkthrough's
    answer shows the site admin, as a stack without SMTP does; ``make run`` prints the mailed
    one) in a browser, chose a username and password, and created a token on her account page:
    ``JANE_TOKEN`` and ``JANE_PASSWORD``, as people.md names them."""
    found = re.search(r'"invitation-url": ?"([^"]+)"', people.message)
    assert found, f"the people walkthrough printed no invitation link:\n{people.message}"
    jane = Visitor(stack)
    form = {"csrf_token": jane.csrf(found.group(1)), "username": "jdoe", "password": PASSWORD}
    joined = jane.post(found.group(1), {**form, "password_again": PASSWORD})
    assert joined.status_code == 303 and SESSION in jane.set_now, joined.text
    made = jane.post(
        "/app/account/tokens",
        {"csrf_token": jane.csrf("/app/account"), "description": "walkthrough"},
    )
    secret = re.search(r'<code id="token-secret">([^<]+)</code>', made.text)
    assert made.status_code == 200 and secret, made.text
    return {"JANE_TOKEN": html.unescape(secret.group(1)), "JANE_PASSWORD": PASSWORD}


# A walkthrough that continues as another person: what that person got in a browser, from
# the outcome of the walkthrough it comes ``after``.
READER: dict[str, Callable[[Stack, Outcome], dict[str, str]]] = {"jane": janes_browser}


def approve_in_chromium(browser: Browser) -> Approve:
    """The reader's browser at terraform login's authorization URL: signs in with the site
    admin's token and approves. Chromium is not told to trust the local CA (that is the
    reader's browser warning once); terraform, the client under test, is."""

    def approve(url: str) -> None:
        context = browser.new_context(ignore_https_errors=True)
        try:
            page = context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            assert "/app/sign-in" in page.url, page.url  # no session yet: the sign-in detour
            page.fill("#token", ADMIN_TOKEN)
            page.click("#token-sign-in button[type=submit]")
            page.wait_for_url("**/app/oauth/authorize?**")
            approve_on(page)
        finally:
            context.close()

    return approve


FOUND = walkthroughs(doc_files())


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, Outcome]]:
    """Each walkthrough's outcome, run once (a walkthrough ``after`` another runs it first)."""
    ran: dict[str, Outcome] = {}
    yield ran
    for name, outcome in ran.items():
        print(f"walkthrough {name}: {outcome.seconds:.1f} s")


def outcome_of(
    name: str, ran: dict[str, Outcome], stack: Stack, base: Path, request: pytest.FixtureRequest
) -> Outcome:
    if name not in ran:
        walk, reader = FOUND[name], {}
        if walk.after:
            before = outcome_of(walk.after, ran, stack, base, request)
            if not before.ok:
                ran[name] = Outcome(False, f"needs {walk.after!r}, which failed", 0.0)
                return ran[name]
            if name in READER:
                reader = READER[name](stack, before)
        approve = None
        if any(block.answers == "login" for block in walk.blocks):
            approve = approve_in_chromium(request.getfixturevalue("browser"))
        ran[name] = run(walk, stack, base / name, reader, approve)
    return ran[name]


def test_the_docs_mark_their_walkthroughs() -> None:
    expected = {"modules", "providers", "people", "jane", "projects", "mail", "https", "findings"}
    expected |= {"terraform-login", "audit", "deadline", "notifications", "campaigns", "cache"}
    assert expected == set(FOUND), sorted(FOUND)
    for walk in FOUND.values():
        assert not walk.after or walk.after in FOUND, f"{walk.name} after unknown {walk.after}"


def test_every_other_shell_block_says_why_it_is_not_run() -> None:
    """On the docs site's pages and the README."""
    unmarked = []
    for path in doc_files():
        lines = path.read_text().splitlines()
        inside = False
        for number, line in enumerate(lines):
            if not line.startswith("```"):
                continue
            if not inside and FENCE.match(line):
                before = lines[number - 1].strip() if number else ""
                if not (MARKER.match(before) or NOT_RUN.match(before)):
                    unmarked.append(f"{path.relative_to(ROOT)}:{number + 1}")
            inside = not inside
    assert not unmarked, f"shell blocks neither walkthroughs nor <!-- not run: -->: {unmarked}"


@pytest.mark.parametrize("name", sorted(FOUND, key=lambda n: (bool(FOUND[n].after), n)))
def test_walkthrough_runs_verbatim(
    name: str,
    stack: Stack,
    outcomes: dict[str, Outcome],
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> None:
    base = tmp_path_factory.getbasetemp() / "walkthroughs"
    outcome = outcome_of(name, outcomes, stack, base, request)
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
