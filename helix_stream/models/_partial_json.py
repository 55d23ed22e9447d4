"""Partial JSON: the value an incomplete JSON text already holds, as it streams in.

A structured answer streams as JSON text. :class:`PartialJSON` is fed the text deltas and,
after each, says what object the text so far describes: an unfinished string is cut where it
stands, an unfinished literal (``tr``) is completed, a key without a value is left out, and
open objects and arrays are closed. This is what the AI SDK's partial output stream does.

The scanner is incremental: each delta is scanned once, and the closing text is built from the
stack of open containers, so a long answer costs one pass plus a parse of the repaired text
per delta.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PartialJSON", "parse_partial_json"]

# Scanner states. A value that starts is pushed with the state to return to when it ends.
_ROOT, _FINISH = "root", "finish"
_STRING, _ESCAPE, _UNICODE = "string", "escape", "unicode"
_NUMBER, _LITERAL = "number", "literal"
_OBJ_START, _OBJ_KEY, _KEY_ESCAPE = "obj_start", "obj_key", "key_escape"
_OBJ_AFTER_KEY, _OBJ_BEFORE_VALUE = "obj_after_key", "obj_before_value"
_OBJ_AFTER_VALUE, _OBJ_AFTER_COMMA = "obj_after_value", "obj_after_comma"
_ARR_START, _ARR_AFTER_VALUE, _ARR_AFTER_COMMA = "arr_start", "arr_after_value", "arr_after_comma"

_LITERALS = ("true", "false", "null")
_CLOSE_OBJECT = frozenset(
    {_OBJ_START, _OBJ_KEY, _OBJ_AFTER_KEY, _OBJ_BEFORE_VALUE, _OBJ_AFTER_VALUE, _OBJ_AFTER_COMMA}
)
_CLOSE_ARRAY = frozenset({_ARR_START, _ARR_AFTER_VALUE, _ARR_AFTER_COMMA})


class PartialJSON:
    """Feed JSON text in pieces; read the value it holds so far.

    Text before the first ``{`` or ``[`` (a code fence, a word of preamble) is skipped, and
    so is anything after the value is complete.

    Example::

        partial = PartialJSON()
        partial.feed('{"city": "Par')   # {"city": "Par"}
        partial.feed('is", "temp": 2')  # {"city": "Paris", "temp": 2}
    """

    __slots__ = ("_hex", "_last", "_length", "_pieces", "_stack", "_start", "_value", "_word")

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._length = 0
        self._stack: list[str] = [_ROOT]
        self._start = -1  # index of the value's first character
        self._last = -1  # the last index after which the text can be closed
        self._word = ""  # the literal being read (a prefix of true, false or null)
        self._hex = 0  # hex digits read of a \\u escape
        self._value: Any = None

    @property
    def text(self) -> str:
        """All the text fed so far."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def value(self) -> Any:
        """The value of the text so far (``None`` before anything parses)."""
        return self._value

    def feed(self, delta: str) -> Any:
        """Add ``delta``; return the new value if it changed, else ``None``."""
        offset = self._length
        self._pieces.append(delta)
        self._length += len(delta)
        for i, char in enumerate(delta, start=offset):
            self._step(char, i)
        value = self._parse()
        if value is None or value == self._value:
            return None
        self._value = value
        return value

    # -- the scanner --------------------------------------------------------------------------

    def _step(self, char: str, i: int) -> None:
        state = self._stack[-1]
        if state == _ROOT:
            if char in "{[":
                self._start = i
                self._value_start(char, i, _FINISH)
        elif state == _STRING:
            if char == '"':
                self._stack.pop()
                self._last = i
            elif char == "\\":
                self._stack.append(_ESCAPE)
            else:
                self._last = i
        elif state == _ESCAPE:
            self._stack.pop()
            if char == "u":
                self._hex = 0
                self._stack.append(_UNICODE)
            else:
                self._last = i
        elif state == _UNICODE:
            self._hex += 1
            if self._hex == 4:
                self._stack.pop()
                self._last = i
        elif state == _NUMBER:
            self._number(char, i)
        elif state == _LITERAL:
            self._literal_char(char, i)
        else:
            self._structure(state, char, i)

    def _structure(self, state: str, char: str, i: int) -> None:
        stack = self._stack
        if state in (_OBJ_START, _OBJ_AFTER_COMMA):
            if char == '"':
                stack[-1] = _OBJ_KEY
            elif char == "}" and state == _OBJ_START:
                stack.pop()
                self._last = i
        elif state == _OBJ_KEY:
            if char == '"':
                stack[-1] = _OBJ_AFTER_KEY
            elif char == "\\":
                stack.append(_KEY_ESCAPE)
        elif state == _KEY_ESCAPE:
            stack.pop()
        elif state == _OBJ_AFTER_KEY:
            if char == ":":
                stack[-1] = _OBJ_BEFORE_VALUE
        elif state == _OBJ_BEFORE_VALUE:
            self._value_start(char, i, _OBJ_AFTER_VALUE)
        elif state == _OBJ_AFTER_VALUE:
            if char == ",":
                stack[-1] = _OBJ_AFTER_COMMA
            elif char == "}":
                stack.pop()
                self._last = i
        elif state in (_ARR_START, _ARR_AFTER_COMMA):
            if char == "]" and state == _ARR_START:
                stack.pop()
                self._last = i
            else:
                self._value_start(char, i, _ARR_AFTER_VALUE)
        elif state == _ARR_AFTER_VALUE:
            if char == ",":
                stack[-1] = _ARR_AFTER_COMMA
            elif char == "]":
                stack.pop()
                self._last = i

    def _value_start(self, char: str, i: int, then: str) -> None:
        """A value may start at ``char``; when it ends, the state becomes ``then``."""
        push = None
        if char == '"':
            push = _STRING
        elif char in "tfn":
            push = _LITERAL
            self._word = char
        elif char == "-" or char.isdigit():
            push = _NUMBER
        elif char == "{":
            push = _OBJ_START
        elif char == "[":
            push = _ARR_START
        if push is None:
            return
        self._stack[-1] = then
        self._stack.append(push)
        if char != "-":  # a lone minus sign is not a value yet
            self._last = i

    def _number(self, char: str, i: int) -> None:
        if char.isdigit():
            self._last = i
        elif char in ".eE+-":
            pass  # not a complete number until a digit follows
        else:
            self._stack.pop()
            self._after_value(char, i)

    def _literal_char(self, char: str, i: int) -> None:
        word = self._word + char
        if any(lit.startswith(word) for lit in _LITERALS):
            self._word = word
            self._last = i
        else:
            self._stack.pop()
            self._after_value(char, i)

    def _after_value(self, char: str, i: int) -> None:
        """A number or literal ended at ``char``: hand it to the container around it."""
        state = self._stack[-1]
        if state in (_OBJ_AFTER_VALUE, _ARR_AFTER_VALUE):
            self._structure(state, char, i)

    # -- repair ------------------------------------------------------------------------------

    def _closing(self) -> str:
        tail: list[str] = []
        for state in reversed(self._stack):
            if state == _STRING:
                tail.append('"')
            elif state in _CLOSE_OBJECT:
                tail.append("}")
            elif state in _CLOSE_ARRAY:
                tail.append("]")
            elif state == _LITERAL:
                for lit in _LITERALS:
                    if lit.startswith(self._word):
                        tail.append(lit[len(self._word) :])
                        break
        return "".join(tail)

    def _parse(self) -> Any:
        if self._start < 0 or self._last < self._start:
            return None
        text = self.text[self._start : self._last + 1] + self._closing()
        try:
            return json.loads(text)
        except ValueError:
            return None


def parse_partial_json(text: str) -> Any:
    """The value an incomplete JSON text holds so far (``None`` if nothing yet)."""
    partial = PartialJSON()
    partial.feed(text)
    return partial.value
