"""Import and export statements merge by the names they list, and refuse what would be lost."""

from __future__ import annotations

from workers.entity_merge import merge_file


def test_an_import_dropped_on_one_side_keeps_the_names_the_other_side_added() -> None:
    """`from typing import Tuple` dropped by theirs, changed to other names by ours: ours' stay."""
    base = b"from typing import Tuple\n\nx = 1\n"
    ours = b"from typing import TYPE_CHECKING, overload\n\nx = 1\n"
    theirs = b"from __future__ import annotations\n\nx = 2\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == (
        b"from __future__ import annotations\nfrom typing import TYPE_CHECKING, overload\n\nx = 2\n"
    )


def test_an_import_dropped_on_one_side_and_only_trimmed_on_the_other_goes() -> None:
    """A side that only removed names from an import the other side dropped adds nothing back."""
    base = b"from os import path, sep\n\nx = 1\n"
    ours = b"from os import path\n\nx = 1\n"
    theirs = b"x = 2\n"
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == b"x = 2\n"


def test_one_per_line_import_lists_extended_apart_keep_each_sides_place() -> None:
    """Both sides add to a sorted one-per-line list at different places: it stays sorted."""
    base = b'import {\n  Alpha,\n  Delta,\n  Omega,\n} from "./letters";\n'
    ours = base.replace(b"  Delta,\n", b"  Beta,\n  Delta,\n")
    theirs = base.replace(b"  Omega,\n", b"  Kappa,\n  Omega,\n")
    result = merge_file(base, ours, theirs, "src/a.ts")
    assert result.clean
    assert result.content == (
        b'import {\n  Alpha,\n  Beta,\n  Delta,\n  Kappa,\n  Omega,\n} from "./letters";\n'
    )


def test_two_sides_changing_the_module_of_one_import_differently_conflict() -> None:
    """Ours and theirs point one import at two different modules: no silent pick."""
    base = b"import { load } from './io';\n\nload();\n"
    ours = b"import { load } from './io/v2';\n\nload();\n"
    theirs = b"import { load, save } from './storage';\n\nload();\n"
    result = merge_file(base, ours, theirs, "src/a.js")
    assert not result.clean
    [conflict] = result.conflicts
    assert conflict.kind == "import"


def test_names_separated_by_comments_are_left_to_the_line_merge() -> None:
    """A list with a comment between names is not rewritten: one-line edits of it conflict."""
    base = b"from m import (\n    a,  # first\n    b,\n)\n"
    ours = base.replace(b"    b,\n", b"    b,\n    c,\n")
    theirs = base.replace(b"    b,\n", b"    b,\n    d,\n")
    result = merge_file(base, ours, theirs, "m.py")
    assert not result.clean


def test_a_module_imported_in_two_statements_by_one_side_meets_the_other_sides_same_line() -> None:
    """Ours adds two imports from one module, theirs one of them: it is imported once."""
    base = b"import os\n\n\ndef f():\n    return os.sep\n"
    ours = base.replace(b"import os\n", b"import os\nfrom m import a\nfrom m import b\n")
    theirs = base.replace(b"import os\n", b"import os\nfrom m import a\n")
    result = merge_file(base, ours, theirs, "m.py")
    assert result.clean
    assert result.content == ours


def test_an_import_moved_below_its_neighbour_still_meets_the_other_sides_edit() -> None:
    """Ours moves an import to another module and below the next; theirs trims it: one import."""
    base = (
        b'import { a, b, c } from "lib/utils";\nimport { DEV } from "lib/env";\n\na(b(c(DEV)));\n'
    )
    ours = (
        b'import { DEV } from "lib/env";\nimport { a, b, c } from "lib/utils/internal";\n\n'
        b"a(b(c(DEV)));\n"
    )
    theirs = b'import { a } from "lib/utils";\nimport { DEV } from "lib/env";\n\na(DEV);\n'
    result = merge_file(base, ours, theirs, "src/a.ts")
    assert result.clean
    assert result.content == (
        b'import { DEV } from "lib/env";\nimport { a } from "lib/utils/internal";\n\na(DEV);\n'
    )


# A filled list: names wrapped to a width, some ending a line (sympy's, ansible's style).
PY_FILLED = b"""from sympy.physics.control import (pole_zero_data, pole_zero_plot,
    bode_phase_data, bode_plot)


def plots():
    return pole_zero_plot, bode_plot
"""


def test_a_filled_import_list_extended_at_one_place_on_both_sides_keeps_both_names() -> None:
    """sympy's test_control_plots.py: each side appended one plot to the same list."""
    ours = PY_FILLED.replace(b"bode_plot)", b"bode_plot, nichols_plot)")
    theirs = PY_FILLED.replace(b"bode_plot)", b"bode_plot, nyquist_plot)")
    result = merge_file(PY_FILLED, ours, theirs, "test_plots.py")
    assert result.clean, result.conflicts
    assert result.content == PY_FILLED.replace(
        b"bode_plot)", b"bode_plot, nichols_plot, nyquist_plot)"
    )


def test_a_name_dropped_from_the_start_of_a_wrapped_line_keeps_the_line_break() -> None:
    ours = PY_FILLED.replace(b"pole_zero_plot,\n", b"pole_zero_plot, step_plot,\n")
    theirs = PY_FILLED.replace(b"    bode_phase_data, ", b"    ")
    result = merge_file(PY_FILLED, ours, theirs, "test_plots.py")
    assert result.clean, result.conflicts
    assert result.content.startswith(
        b"from sympy.physics.control import (pole_zero_data, pole_zero_plot, step_plot,\n"
        b"    bode_plot)\n"
    )


def test_a_filled_list_one_side_moved_to_another_module_while_the_other_added_conflicts() -> None:
    """The added name may not exist in the new module: no silent guess."""
    ours = PY_FILLED.replace(b"sympy.physics.control", b"sympy.physics.control.plots")
    theirs = PY_FILLED.replace(b"bode_plot)", b"bode_plot, nyquist_plot)")
    result = merge_file(PY_FILLED, ours, theirs, "test_plots.py")
    assert not result.clean


def test_names_grouped_by_blank_lines_are_left_to_the_line_merge() -> None:
    """A blank line between names is a grouping the name merge would have to guess at."""
    base = b"from m import (a, b,\n\n    c)\n\nx = a\n"
    ours = base.replace(b"c)", b"c, d)")
    theirs = base.replace(b"c)", b"c, e)")
    assert not merge_file(base, ours, theirs, "m.py").clean


def test_a_default_export_object_edited_on_touching_lines_merges() -> None:
    """ember's vite.config.mjs: an `export default { … }` is a statement, not a name list."""
    base = b"export default {\n  build: {\n    minify: false,\n    sourcemap: false,\n  },\n};\n"
    ours = base.replace(b"minify: false", b"minify: true")
    theirs = base.replace(b"sourcemap: false", b"sourcemap: true")
    result = merge_file(base, ours, theirs, "vite.config.mjs")
    assert result.clean, result.conflicts
    assert result.content == ours.replace(b"sourcemap: false", b"sourcemap: true")


def test_a_name_dropped_from_the_end_of_a_wrapped_line_keeps_the_line_break() -> None:
    """ansible's vmware_guest.py: theirs dropped the last name of a line."""
    ours = PY_FILLED.replace(b"bode_plot)", b"bode_plot, nyquist_plot)")
    theirs = PY_FILLED.replace(b"pole_zero_data, pole_zero_plot,", b"pole_zero_data,")
    result = merge_file(PY_FILLED, ours, theirs, "test_plots.py")
    assert result.clean, result.conflicts
    assert result.content.startswith(
        b"from sympy.physics.control import (pole_zero_data,\n"
        b"    bode_phase_data, bode_plot, nyquist_plot)\n"
    )
