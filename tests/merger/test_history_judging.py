"""The real-history benchmark's own wrong-merge check for Java (merge_history/judging.py).

The check is written apart from the driver and decides what the benchmark prints as a
wrong merge, so a false alarm and a missed duplicate both matter.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "merge_history"))

from judging import Facts

BASE = b"abstract class OldName {\n    int size() {\n        return 0;\n    }\n}\n"


def facts(ours: bytes, theirs: bytes) -> Facts:
    return Facts("A.java", {"base": BASE, "ours": ours, "theirs": theirs})


def test_a_method_added_to_a_class_the_other_side_renamed_is_not_a_duplicate() -> None:
    method = b"    static boolean ready(int n) {\n        return n > 0;\n    }\n"
    ours = BASE.replace(b"}\n}\n", b"}\n" + method + b"}\n")
    theirs = BASE.replace(b"OldName", b"NewName")
    merged = theirs.replace(b"}\n}\n", b"}\n" + method + b"}\n")
    assert facts(ours, theirs).wrong_reason(merged) == ""


def test_two_sides_versions_of_one_new_method_kept_as_overloads_is_a_duplicate() -> None:
    strings = b"    void add(java.util.List<String> items) {\n    }\n"
    numbers = b"    void add(java.util.List<Integer> items) {\n    }\n"
    ours = BASE.replace(b"}\n}\n", b"}\n" + strings + b"}\n")
    theirs = BASE.replace(b"}\n}\n", b"}\n" + numbers + b"}\n")
    merged = BASE.replace(b"}\n}\n", b"}\n" + strings + numbers + b"}\n")
    assert facts(ours, theirs).wrong_reason(merged).startswith("duplicate: OldName.add(")


def test_the_same_duplicate_in_a_renamed_class_is_still_one() -> None:
    strings = b"    void add(java.util.List<String> items) {\n    }\n"
    numbers = b"    void add(java.util.List<Integer> items) {\n    }\n"
    ours = BASE.replace(b"}\n}\n", b"}\n" + strings + b"}\n")
    theirs = BASE.replace(b"OldName", b"NewName").replace(b"}\n}\n", b"}\n" + numbers + b"}\n")
    merged = BASE.replace(b"OldName", b"NewName").replace(
        b"}\n}\n", b"}\n" + strings + numbers + b"}\n"
    )
    assert facts(ours, theirs).wrong_reason(merged).startswith("duplicate: NewName.add(")


def test_a_side_that_only_converted_line_endings_changed_no_definition() -> None:
    """Theirs turned CRLF into LF, ours rewrote a constructor under a new signature
    (RxJava's Pattern2.java): ours did not delete a definition theirs changed."""
    base = (
        b"class P {\r\n    P(Observable a, Observable b) {\r\n        this.a = a;\r\n"
        b"        this.b = b;\r\n    }\r\n}\r\n"
    )
    ours = (
        b"class P {\r\n    P(IObservable a, IObservable b) {\r\n        this.a = wrap(a);\r\n"
        b"        this.b = wrap(b);\r\n    }\r\n}\r\n"
    )
    theirs = base.replace(b"\r\n", b"\n")
    judged = Facts("P.java", {"base": base, "ours": ours, "theirs": theirs})
    assert judged.wrong_reason(ours.replace(b"\r\n", b"\n")) == ""
    # Without the conversion, the same rewrite against an edit is a contested definition.
    edited = base.replace(b"this.b = b;", b"this.b = b.cache();")
    judged = Facts("P.java", {"base": base, "ours": ours, "theirs": edited})
    assert judged.wrong_reason(ours).startswith("defined and deleted: P.P(Observable, Observable)")


def test_a_merge_mixing_line_endings_no_side_mixed_is_wrong() -> None:
    """RxJava's Pattern1.java: theirs converted CRLF to LF, the merge kept CRLF on ours'
    lines; the check read it as fine."""
    base = b"class P {\r\n    int a() {\r\n        return 1;\r\n    }\r\n}\r\n"
    ours = base.replace(b"return 1", b"return 2")
    theirs = base.replace(b"\r\n", b"\n")
    judged = Facts("P.java", {"base": base, "ours": ours, "theirs": theirs})
    mixed = theirs.replace(b"        return 1;\n", b"        return 2;\r\n")
    assert judged.wrong_reason(mixed).startswith("mixed line endings")
    assert judged.wrong_reason(ours.replace(b"\r\n", b"\n")) == ""
