"""A plan's ``[contract]`` table: read it, and say what is wrong with it. Pure.

The plan parser (:mod:`projections.planning`) hands the table here. Reading
checks the shape (one line per problem naming the field, the value and the fix);
:func:`contract_problems` checks what needs no repository (node ids well formed, each
criterion's text defining its function, each criterion owned by exactly one unit of the
plan, no id twice); :func:`repository_problems` checks it against what trunk holds (a new
check may not reuse a check's id: that would edit a check, not add one; a criterion may
not land in an existing file that is not a test file, nor redefine a test there).
"""

import ast
import posixpath
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from schemas.contract import ContractChanges, NewCheck, NewCriterion
from schemas.ids import is_token
from schemas.project_config import PARSER_NAMES
from schemas.slices import SlicePlan

CONTRACT_KEYS = ("checks", "criteria", "capabilities")
CHECK_KEYS = ("id", "command", "parser", "timeout", "reads", "env", "pending")
CRITERION_KEYS = ("test", "text", "check")

NODE_ID = re.compile(r"^(?P<path>[A-Za-z0-9_./-]+\.py)::(?P<func>test[A-Za-z0-9_]*)\Z")
"""``tests/test_x.py::test_y``: a test function at the top level of a file."""


def parse_contract(raw: Any, problems: list[str]) -> ContractChanges | None:
    """The ``[contract]`` table as :class:`ContractChanges` (``None`` when absent or
    wrong; every problem appended to ``problems``)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(
            "contract: expected a table ([contract], [[contract.checks]], [[contract.criteria]])"
        )
        return None
    before = len(problems)
    _unknown(raw, CONTRACT_KEYS, "contract", problems)
    checks = [
        c for i, t in enumerate(_tables(raw, "checks", problems)) if (c := _check(t, i, problems))
    ]
    criteria = [
        n
        for i, t in enumerate(_tables(raw, "criteria", problems))
        if (n := _criterion(t, i, problems))
    ]
    capabilities = raw.get("capabilities", [])
    if not isinstance(capabilities, list) or not all(
        isinstance(c, str) and is_token(c) for c in capabilities
    ):
        problems.append(
            f"contract.capabilities={capabilities!r} must be a list of capability names "
            '(e.g. ["python"])'
        )
        capabilities = []
    if len(problems) > before:
        return None
    return ContractChanges(
        checks=tuple(checks), criteria=tuple(criteria), capabilities=tuple(capabilities)
    )


def _tables(raw: dict[str, Any], key: str, problems: list[str]) -> list[Any]:
    found = raw.get(key, [])
    if not isinstance(found, list):
        problems.append(f"contract.{key}: write each entry as a [[contract.{key}]] table")
        return []
    return found


def _check(table: Any, index: int, problems: list[str]) -> NewCheck | None:
    where = f"contract.checks[{index}]"
    if not isinstance(table, dict):
        problems.append(f"{where}: expected a table with id, command and parser")
        return None
    before = len(problems)
    if "image" in table:
        problems.append(
            f"{where}.image={table['image']!r}: a contract adds host checks only; a check "
            "in a container is the operator's to add (loopbus config propose)"
        )
    _unknown({k: v for k, v in table.items() if k != "image"}, CHECK_KEYS, where, problems)
    check_id = table.get("id")
    if not isinstance(check_id, str) or not is_token(check_id):
        problems.append(f"{where}.id={check_id!r} is not valid: use 1-64 letters, digits, - or _")
    command = table.get("command")
    if not isinstance(command, str) or not command.strip():
        problems.append(
            f'{where}.command={command!r}: give the command to run, e.g. "python -m pytest -q"'
        )
    parser = table.get("parser", "exit-code")
    if parser not in PARSER_NAMES:
        names = ", ".join(PARSER_NAMES)
        problems.append(f"{where}.parser={parser!r} is not valid: use one of {names}")
    timeout = table.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        problems.append(f"{where}.timeout={timeout!r} is not valid: seconds, a number > 0")
    reads = table.get("reads")
    if reads is not None and (
        not isinstance(reads, list) or not all(isinstance(r, str) for r in reads)
    ):
        problems.append(f'{where}.reads={reads!r} must be a list of paths (e.g. ["src/"])')
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        problems.append(f'{where}.env={env!r} must be a table of strings (e.g. {{ CI = "1" }})')
    pending = table.get("pending", [])
    if not isinstance(pending, list) or not all(isinstance(p, str) for p in pending):
        problems.append(f"{where}.pending={pending!r} must be a list of pytest node ids")
    if len(problems) > before:
        return None
    return NewCheck(
        id=str(check_id),
        command=str(command),
        parser=str(parser),
        timeout=float(timeout) if timeout is not None else None,
        reads=list(reads) if reads is not None else None,
        env=dict(env),
        pending=list(pending),
    )


def _criterion(table: Any, index: int, problems: list[str]) -> NewCriterion | None:
    where = f"contract.criteria[{index}]"
    if not isinstance(table, dict):
        problems.append(f"{where}: expected a table with test and text")
        return None
    before = len(problems)
    _unknown(table, CRITERION_KEYS, where, problems)
    test, text, check = table.get("test"), table.get("text"), table.get("check", "")
    if not isinstance(test, str):
        problems.append(
            f'{where}.test={test!r}: give the pytest node id, "tests/test_x.py::test_y"'
        )
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{where}.text={text!r}: give the test function's source, with its imports")
    if not isinstance(check, str) or (check and not is_token(check)):
        problems.append(f"{where}.check={check!r}: name the check whose pending list it joins")
    if len(problems) > before:
        return None
    return NewCriterion(test=str(test), text=str(text), check=str(check))


def _unknown(
    table: Mapping[str, Any], known: Sequence[str], where: str, problems: list[str]
) -> None:
    for key in table:
        if key not in known:
            problems.append(f"{where}: unknown field {key!r}; known fields: {', '.join(known)}")


# -- validation ---------------------------------------------------------------------------


def node_parts(test: str) -> tuple[str, str] | None:
    """(file, function) of a well-formed criterion node id, else ``None``."""
    found = NODE_ID.match(test)
    if found is None:
        return None
    path = found["path"]
    if path.startswith("/") or ".." in path.split("/") or not is_test_file(path):
        return None
    return path, found["func"]


def is_test_file(path: str) -> bool:
    """A file pytest collects by default: ``test_*.py`` or ``*_test.py``."""
    name = posixpath.basename(path)
    return name.startswith("test_") or name.endswith("_test.py")


def defines(text: str, function: str) -> bool | None:
    """Whether ``text`` defines ``function`` at its top level (``None``: not Python)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
        for node in tree.body
    )


def text_problems(where: str, text: str, function: str) -> list[str]:
    """What is wrong with a criterion's ``text`` for ``function``: it is appended to a test
    file, so anything beyond imports and the one named function (another def, a
    ``pytestmark``, module-level monkeypatching) would silently change the file's other
    tests. Only imports plus exactly that one top-level function are allowed."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [f"{where}.text does not parse as Python; give {function}'s source with its imports"]
    functions = [
        node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
    if not any(node.name == function for node in functions):
        return [
            f"{where}.text does not define {function}; it must hold 'def {function}(...)' "
            "at its top level"
        ]
    extra = [
        node
        for node in tree.body
        if not isinstance(node, ast.Import | ast.ImportFrom)
        and not (isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function)
    ]
    if extra or len(functions) != 1:
        node = extra[0] if extra else functions[1]
        return [
            f"{where}.text holds {type(node).__name__} at line {node.lineno} beside "
            f"{function}; a criterion's text is imports plus exactly one top-level function, "
            f"def {function}, and nothing else"
        ]
    return []


def _bindings(text: str) -> dict[str, tuple[Any, ...] | None]:
    """Names ``text`` binds at its top level: an import's key (module, name, alias), or
    ``None`` for any other binding (def, class, assignment, ...)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[str, tuple[Any, ...] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                out[bound] = ("import", alias.name, alias.asname)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = (
                    "from",
                    node.module,
                    node.level,
                    alias.name,
                    alias.asname,
                )
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out[node.name] = None
        else:
            for child in ast.walk(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    out[child.name] = None
                elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                    out[child.id] = None
    return out


def contract_problems(plan: SlicePlan) -> list[str]:
    """What is wrong with ``plan``'s contract without a repository to read (one line each)."""
    contract = plan.contract
    if contract is None:
        return []
    problems: list[str] = []
    owners: dict[str, list[str]] = {}
    for unit in plan.units:
        for claimed_id in unit.criteria:
            owners.setdefault(claimed_id, []).append(unit.id)
    seen: set[str] = set()
    for index, criterion in enumerate(contract.criteria):
        where = f"contract.criteria[{index}]"
        parts = node_parts(criterion.test)
        if parts is None:
            problems.append(
                f"{where}.test={criterion.test!r} is not a well-formed node id: write "
                "'tests/test_x.py::test_y' (a test_*.py or *_test.py file inside the "
                "repository, a top-level function whose name starts with test)"
            )
            continue
        if criterion.test in seen:
            problems.append(f"{where}.test={criterion.test!r} is added twice; add it once")
        seen.add(criterion.test)
        problems.extend(text_problems(where, criterion.text, parts[1]))
        claimed = owners.get(criterion.test, [])
        if len(claimed) != 1:
            problems.append(
                f"{where}.test={criterion.test!r} is claimed by "
                f"{'no unit' if not claimed else ', '.join(claimed)}; exactly one unit of "
                "this plan must list it in its criteria (it is that unit's to make pass)"
            )
    ids: set[str] = set()
    for index, check in enumerate(contract.checks):
        if check.id in ids:
            problems.append(f"contract.checks[{index}].id={check.id!r} is added twice; add it once")
        ids.add(check.id)
    return problems


def repository_problems(
    plan: SlicePlan,
    checks: Collection[str],
    read: Callable[[str], str | None],
) -> list[str]:
    """What is wrong with ``plan``'s contract given trunk: ``checks`` are the ids of the
    checks its ``loopbus.toml`` has, ``read(path)`` a file's text on trunk (``None``:
    absent)."""
    contract = plan.contract
    if contract is None:
        return []
    problems: list[str] = []
    for index, check in enumerate(contract.checks):
        if check.id in checks:
            problems.append(
                f"contract.checks[{index}].id={check.id!r} is a check trunk has already: a "
                "contract adds checks, it never edits one; pick a new id (editing or "
                "loosening a check goes through the ratchet, loopbus gate move)"
            )
    # Earlier criteria of the same contract land in the same file first: a later one may
    # not rebind their names either.
    landed: dict[str, str] = {}
    for index, criterion in enumerate(contract.criteria):
        where = f"contract.criteria[{index}]"
        problems.extend(_file_problem(where, criterion, read))
        parts = node_parts(criterion.test)
        if parts is None:
            continue
        path = parts[0]
        trunk = landed.get(path, read(path) or "")
        problems.extend(_rebinding_problems(where, criterion, path, trunk))
        landed[path] = trunk + "\n\n\n" + criterion.text
    return problems


def _rebinding_problems(where: str, criterion: NewCriterion, path: str, existing: str) -> list[str]:
    """A criterion's text is appended after the file's own code, so any name it binds that
    the file already binds would replace the file's (a test, a fixture, an import) for
    every test in it; only the very same import may repeat."""
    before = _bindings(existing)
    problems = []
    function = (node_parts(criterion.test) or ("", ""))[1]
    for name, key in _bindings(criterion.text).items():
        if name == function and defines(existing, function):
            continue  # _file_problem names a redefined test already
        if name in before and (key is None or before[name] != key):
            problems.append(
                f"{where}.test={criterion.test!r}: its text binds {name}, which {path} "
                "already defines; a contract adds names, it never rebinds one; rename it "
                "or import it exactly as the file does"
            )
    return problems


def _file_problem(
    where: str, criterion: NewCriterion, read: Callable[[str], str | None]
) -> list[str]:
    parts = node_parts(criterion.test)
    if parts is None:
        return []
    path, function = parts
    existing = read(path)
    if existing is None:
        return []
    found = defines(existing, function)
    if found is None or not any(name.startswith("test") for name in _top_functions(existing)):
        return [
            f"{where}.test={criterion.test!r}: {path} exists on trunk and is not a test "
            "file; put the criterion in a test file of its own"
        ]
    if found:
        return [
            f"{where}.test={criterion.test!r}: {path} already defines {function}; a "
            "contract adds criteria, it never replaces one; pick a new name"
        ]
    return []


def _top_functions(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]
