"""The user's documents, readable where the web is not: `python -m localeval docs [TOPIC]`.

--help and the messages name documents (the labeled format, the judges' measurements); an air-gapped
user of a wheel has no source tree to open them in. So the wheel carries docs/*.md inside the package
(pyproject.toml maps them to localeval/docs) and README.md as its description, and a source tree
(a clone, an editable install) has both beside the package.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from .errors import EnvironmentFailure, UserError

PACKAGE = Path(__file__).resolve().parent
README = "readme"


def see(topic: str) -> str:
    """How --help and messages name a document: the command that prints it, wherever localeval is installed."""
    return f"localeval docs {topic}"


def topics() -> dict[str, str]:
    """{topic: its title}, the README first."""
    found = {README: "set-up, commands, input and output, exit codes, the Python API, Ray"}
    found.update({path.stem: _title(path.read_text(encoding="utf-8")) for path in sorted(_folder().glob("*.md"))})
    return found


def text(asked: str) -> str:
    """The document `asked` names: its topic, or the link the documents give it (docs/judges.md#a-section,
    README.md), the section dropped."""
    topic = asked.split("#", 1)[0].replace("\\", "/").removeprefix("docs/").removesuffix(".md")
    topic = README if topic.lower() == README else topic
    if topic == README:
        return _readme()
    path = _folder() / f"{topic}.md"
    if not path.is_file():
        raise UserError(f"no document named {asked!r}; `localeval docs` lists them: {', '.join(topics())}")
    return path.read_text(encoding="utf-8")


def listing() -> str:
    rows = [f"  {name:<14} {title}" for name, title in topics().items()]
    return "\n".join(["documents (python -m localeval docs TOPIC prints one; | less to page it):", *rows])


def _source_tree() -> Path | None:
    """The clone the package runs from, if it does (not a wheel in site-packages)."""
    root = PACKAGE.parent
    return root if (root / "pyproject.toml").is_file() and (root / "docs").is_dir() else None


def _folder() -> Path:
    root = _source_tree()
    folder = root / "docs" if root else PACKAGE / "docs"
    if not folder.is_dir():
        raise EnvironmentFailure(f"this installation of localeval carries no documents ({folder} is missing); "
                                 "install it again from its wheel or source")
    return folder


def _readme() -> str:
    root = _source_tree()
    if root:  # the clone's own, as edited, not the description an editable install recorded
        return (root / "README.md").read_text(encoding="utf-8")
    try:
        recorded = metadata.metadata("localeval")
    except metadata.PackageNotFoundError:
        recorded = None
    # setuptools writes the description as the body; older metadata kept it in a field
    described = recorded and (recorded.get_payload() or recorded.get("Description"))
    if not described:
        raise EnvironmentFailure("this installation of localeval carries no README; install it again from its "
                                 "wheel or source")
    return described


def _title(document: str) -> str:
    """A document's first heading, without its '#'."""
    first = next((line for line in document.splitlines() if line.startswith("# ")), "")
    return first.removeprefix("# ").strip()
