"""Strict local suppression (k-anonymity with suppressed cells as values), solved exactly.

:mod:`.solve` has the model and the method, :mod:`.candidates` the bound that prunes candidate classes,
:mod:`.mip` the integer programme.
"""

from .solve import StrictSolution, infeasible, missing_as_value, solve_strict, strict_infeasible_rows

__all__ = ["StrictSolution", "infeasible", "missing_as_value", "solve_strict", "strict_infeasible_rows"]
