"""Strict local suppression (k-anonymity with suppressed cells as values), solved exactly.

:mod:`.solve` has the model and the method (on records, :func:`solve_strict`, and on a class table,
:func:`solve_strict_classes`), :mod:`.candidates` the bound that prunes candidate classes, :mod:`.mip`
the integer programme, :mod:`.classes` the class-table run with its independent check (out of core).
"""

from .solve import (
    StrictClasses,
    StrictSolution,
    infeasible,
    missing_as_value,
    solve_strict,
    solve_strict_classes,
    strict_infeasible_rows,
)

__all__ = ["StrictClasses", "StrictSolution", "infeasible", "missing_as_value", "solve_strict",
           "solve_strict_classes", "strict_infeasible_rows"]
