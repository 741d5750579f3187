"""Arithmetic read from model text through Python's ``ast``, never ``eval()``: the ``calc`` tool's.

:func:`evaluate` parses an expression and walks its tree node by node: numbers, ``+ - * / //
% **`` and parentheses, nothing else (no names, calls or attributes); exponents and results are
bounded, so no input can make it run long or build a huge number. Every refusal is an
:class:`ArithmeticRefused` whose message says what to change; :func:`react_lab.billing.calc`
shows it to the model as the tool's error.
"""

from __future__ import annotations

import ast
import operator

from .calls import quiet_parse


class ArithmeticRefused(ValueError):
    """An expression :func:`evaluate` will not compute; the message says why and what to write."""


MAX_EXPONENT = 100
MAX_MAGNITUDE = 1e100
_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}


def evaluate(text: str) -> int | float:
    """Evaluate ``text`` as arithmetic on numbers; :class:`ArithmeticRefused` for anything else."""
    if len(text) > 200:
        raise ArithmeticRefused("expression too long; keep it under 200 characters")
    try:
        tree = quiet_parse(text)  # "1if 1else 2": no SyntaxWarning printed by the tool
    except SyntaxError:
        raise ArithmeticRefused(
            f"cannot parse {text!r}; write arithmetic such as 129.00 * 2"
        ) from None
    return _evaluate(tree.body)


def _evaluate(node: ast.AST) -> int | float:
    """Evaluate one node of an arithmetic expression tree."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return _checked(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if not (isinstance(node, ast.BinOp) and type(node.op) in _BINARY):
        raise ArithmeticRefused(
            f"calc only does arithmetic on numbers; {ast.unparse(node)!r} is not allowed"
        )
    left, right = _evaluate(node.left), _evaluate(node.right)
    if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
        raise ArithmeticRefused(
            f"exponent {right} is out of range; use one from -{MAX_EXPONENT} to {MAX_EXPONENT}"
        )
    try:
        value = _BINARY[type(node.op)](left, right)
    except ZeroDivisionError:
        raise ArithmeticRefused("division by zero; check the divisor") from None
    except OverflowError:
        raise ArithmeticRefused("result too large; use smaller numbers") from None
    if isinstance(value, complex):
        raise ArithmeticRefused("result is not a real number; avoid fractional powers of negatives")
    return _checked(value)


def _checked(value: int | float) -> int | float:
    """Return ``value`` if it is finite and no bigger than MAX_MAGNITUDE; else refuse it."""
    if not abs(value) <= MAX_MAGNITUDE:  # also catches inf and nan
        raise ArithmeticRefused("result too large; use smaller numbers")
    return value
