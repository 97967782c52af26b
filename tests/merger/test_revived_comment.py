"""A commented-out line one side turned into code, the other side kept beside its own edit.

Found blind in the fifth held-out set (actix-web's src/http/header/mod.rs): ours turned
`//pub use self::range::{Range, ByteRangeSpec};` into code; theirs deleted the import
below it, so the comment travelled on with a new neighbour. The merge kept ours' code and
theirs' comment: a line ours deleted, revived. Comment lines were never counted by the
check for revived lines, only code.
"""

from __future__ import annotations

import pytest

CASES = {
    "rust": (
        "m.rs",
        b"pub use self::a::A;\n//pub use self::range::Range;\npub(crate) use helpers::{\n"
        b"    f, g,\n};\n\n/// Writer.\nstruct W;\n",
        b"pub use self::a::A;\npub use self::p::P;\n//pub use self::range::Range;\n\n"
        b"/// Writer.\nstruct W;\n",
    ),
    "python": (
        "m.py",
        b"from a import A\n# from r import Range\nfrom helpers import f\n\n\ndef w():\n    pass\n",
        b"from a import A\nfrom p import P\n# from r import Range\ndef w():\n    pass\n",
    ),
    "typescript": (
        "m.ts",
        b"export { A } from './a';\n// export { Range } from './range';\n"
        b"import { f } from './helpers';\n\nexport class W {}\n",
        b"export { A } from './a';\nexport { P } from './p';\n"
        b"// export { Range } from './range';\nexport class W {}\n",
    ),
}


@pytest.mark.parametrize("language", list(CASES))
def test_a_comment_one_side_turned_into_code_is_not_kept_beside_the_code(language: str) -> None:
    from workers.entity_merge import merge_file

    path, base, theirs = CASES[language]
    commented = next(line for line in base.splitlines(keepends=True) if b"Range" in line)
    code = commented.replace(b"//", b"").replace(b"# ", b"").lstrip()
    ours = base.replace(commented, code)
    result = merge_file(base, ours, theirs, path)
    assert not result.clean, result.content
    assert "one side deleted or rewrote and the other moved" in result.note


def test_a_comment_both_sides_kept_where_it_was_still_merges() -> None:
    """The same comment, untouched by either side, is no revival."""
    from workers.entity_merge import merge_file

    base = b"// See the notes in README.\nfn a() {}\n\nfn b() {}\n"
    ours = base.replace(b"fn a() {}", b"fn a() { run(); }")
    theirs = base.replace(b"fn b() {}", b"fn b() { stop(); }")
    result = merge_file(base, ours, theirs, "m.rs")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b"fn b() {}", b"fn b() { stop(); }")
