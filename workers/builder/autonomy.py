"""A novel decision's autonomy class, and whether ``long`` mode may settle it alone. Pure.

The builder states a class (``safe``, ``risky``, ``decision``, ``irreversible``), but its
word alone is not trusted: loopbus reads the question and every option's text and, where
they speak of deleting data, dropping or truncating tables, migrating, or touching
production, classes the choice ``irreversible`` whatever the builder said. The settled
class is the higher of the two: loopbus may raise a builder's class, never lower it.

The reading is a small list of word patterns, deliberately broad: a false alarm costs the
operator one question, a miss lets an irreversible choice through alone. It cannot read
intent, so a builder that words a destructive option innocently gets past it; that is why
every choice ``long`` picks alone is also put before the next review (docs/decisions.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from schemas.builds import AUTONOMY_CLASSES, AutonomyClass, NovelDecision, stated_class

IRREVERSIBLE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern, re.IGNORECASE))
    for what, pattern in (
        ("deletes data", r"\b(delet(e|es|ed|ing|ion)|purg(e|es|ed|ing)|eras(e|es|ed|ing)"
         r"|wip(e|es|ed|ing)|destroy(s|ed|ing)?|shred(s|ded|ding)?)\b|\brm\s+-[a-z]*[rf]"
         r"|\b(remov(e|es|ed|ing)|clear(s|ed|ing)?|reset(s|ting)?|overwrit(e|es|ing|ten)"
         r"|empt(y|ies|ied|ying))\b.{0,40}\b(table|database|db|data|records|rows|bucket)s?\b"),
        ("drops or truncates", r"\b(drop(s|ped|ping)?|truncat(e|es|ed|ing))\b"),
        ("migrates", r"\bmigrat(e|es|ed|ing|ion|ions)\b|\balter\s+table\b|\bschema\s+change"),
        ("touches production", r"\bprod(uction)?\b|\blive\s+(users?|data|database|traffic)\b"
         r"|\bdeploy(s|ed|ing|ment)?\b|\bforce[- ]push"),
    )
)  # fmt: skip
"""What makes a choice irreversible, and the words that say so (matched case-blind)."""


@dataclass(frozen=True)
class Classified:
    """A decision's settled class, the class its builder stated, and why they differ."""

    autonomy: AutonomyClass
    stated: AutonomyClass | None
    why: str = ""


def rank(autonomy: AutonomyClass) -> int:
    return AUTONOMY_CLASSES.index(autonomy)


def texts(decision: NovelDecision) -> list[tuple[str, str]]:
    """(where, text) for the question and every field of every option."""
    out = [("question", decision.question)]
    for option in decision.options:
        for name in ("id", "summary", "user_impact", "performance", "speed", "cost"):
            out.append((f"option {option.id} {name}", getattr(option, name)))
    return out


def irreversible_reason(decision: NovelDecision) -> str:
    """Where the decision's text speaks of an irreversible act (``""``: nowhere)."""
    for where, text in texts(decision):
        for what, pattern in IRREVERSIBLE:
            found = pattern.search(text)
            if found is not None:
                return f"{where} {what} ({found.group(0)!r})"
    return ""


def classify(decision: NovelDecision) -> Classified:
    """The decision's class: the builder's, raised to ``irreversible`` when its text says so."""
    stated = stated_class(decision)
    reason = irreversible_reason(decision)
    if reason and rank(stated) < rank("irreversible"):
        return Classified("irreversible", decision.autonomy, f"loopbus read: {reason}")
    if decision.autonomy is None:
        return Classified(stated, None, "the builder stated no class")
    return Classified(stated, decision.autonomy)


def may_pick_alone(
    classified: Classified, confidence: str, autonomy: tuple[AutonomyClass, ...]
) -> bool:
    """``long`` mode settles a decision alone only when the project's autonomy allows its
    class and the builder is not unsure; confidence never lifts a class's limit."""
    return classified.autonomy in autonomy and confidence != "low"
