"""SubscribedTopicRegex (KIP-848; GroupMetadataManager.maybeUpdateRegularExpressions) with the semantics of the RE2J the broker uses.

The broker (Kafka 4.3.1, re2j 1.8) validates a new regex with `Pattern.compile(regex)` (no flags) and
answers INVALID_REGULAR_EXPRESSION (128) with the message
"SubscribedTopicRegex `<regex>` is not a valid regular expression: <description>." when it throws;
resolution (`TopicRegexResolver`) keeps every topic name of the metadata image for which
`matcher(name).matches()` holds: a *full* match, and internal topics (`__consumer_offsets`, ...)
are not excluded by the broker.

Here the regex is compiled by RE2 itself (the `google-re2` bindings; RE2J is a Java port of the same
syntax) and matched with `fullmatch`. Differences, found and checked against the real re2j jar by
testsuite/coordinator/test_assignors_java.py (20,000 generated patterns agree):
- re2j rejects a few things RE2 accepts (`\\C`, `[:]` inside a class, a literal `{` followed by a
  repetition operator, non-ASCII or duplicate capture names): `_re2j_only_error` finds the first one
  and it is reported unless RE2 finds an earlier error in the text before it (re2j parses left to
  right, so the first error is the one it reports).
- Error descriptions: RE2's error kinds are mapped to re2j's texts (including re2j 1.8's
  "regexp/syntax: internal error" for an unmatched `)`).
- Not reproduced: RE2 rejects counted repetitions nested so that their product exceeds 1000
  (`(a{100}){100}`, "invalid repeat count" here); re2j compiles them (and runs out of memory on
  `((a{1000}){1000}){1000}`).
Topic names are ASCII ([a-zA-Z0-9._-]), so RE2's UTF-8 and re2j's UTF-16 matching agree on them.
"""

from __future__ import annotations

import functools
import re

import re2
from kcodec.protocol import Error

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False

# RE2 error text (before ": <fragment>") -> RE2J PatternSyntaxException.getDescription()
_DESCRIPTIONS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "regexp/syntax: internal error",   # sic: re2j 1.8
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid repetition size": "invalid repeat count",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "duplicate capture group name": "duplicate capture group name",
    "invalid UTF-8": "invalid UTF-8",
}


class InvalidRegularExpression(ValueError):
    """The regex does not compile with RE2J; `error_code` / `message` are the broker's answer."""

    error_code = Error.INVALID_REGULAR_EXPRESSION

    def __init__(self, regex: str, description: str):
        self.regex = regex
        self.description = description
        self.message = f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {description}."
        super().__init__(self.message)


_REPEAT = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_NAME = re.compile(r"[A-Za-z0-9_]+")


def _re2j_only_error(regex: str) -> tuple[int, str] | None:
    r"""The first place where re2j 1.8 rejects what RE2 accepts: (offset, re2j description).

    - `\C` outside a class: "invalid escape sequence";
    - `[:]` inside a class (re2j looks for the closing `:]` from the `[:` itself):
      "invalid character class range";
    - a `{` that is a literal (not a valid `{n}`, `{n,}`, `{n,m}`) followed by a repetition
      operator: re2j counts it as a repetition, "invalid nested repetition operator";
    - a capture group name that is not ASCII word characters (RE2 also takes Unicode letters, and
      reports `(?<=`, `(?<!` differently): "invalid named capture";
    - a capture group name used twice: "duplicate capture group name".
    """
    i, n = 0, len(regex)
    in_class = False
    names: set[str] = set()
    while i < n:
        c = regex[i]
        if c == "\\":
            nxt = regex[i + 1:i + 2]
            if nxt == "Q":
                j = regex.find("\\E", i + 2)
                if j < 0:
                    return None
                i = j + 2
                continue
            if nxt == "C" and not in_class:
                return i, "invalid escape sequence"
            if nxt in ("p", "P", "x") and regex.startswith("{", i + 2):
                j = regex.find("}", i + 3)
                if j < 0:
                    return None
                i = j + 1
                continue
            i += 2
            continue
        if in_class:
            if regex.startswith("[:]", i):
                return i, "invalid character class range"
            if regex.startswith("[:", i):
                j = regex.find(":]", i + 2)
                if j >= 0:
                    i = j + 2
                    continue
            if c == "]":
                in_class = False
            i += 1
            continue
        if c == "[":
            in_class = True
            i += 1
            if regex.startswith("^", i):
                i += 1
            if regex.startswith("]", i):   # a leading ']' is a literal
                i += 1
            continue
        if c == "{":
            m = _REPEAT.match(regex, i)
            if m:
                i = m.end()
                continue
            if regex[i + 1:i + 2] in ("*", "+", "?") and i + 1 < n or _REPEAT.match(regex, i + 1):
                return i, "invalid nested repetition operator"
            i += 1
            continue
        if c == "(" and (regex.startswith("(?P<", i) or regex.startswith("(?<", i)):
            j = regex.find(">", i)
            name = regex[regex.index("<", i) + 1:j] if j >= 0 else ""
            if not _NAME.fullmatch(name):        # re2j: ASCII word characters only
                return i, "invalid named capture"
            if name in names:
                return i, "duplicate capture group name"
            names.add(name)
        i += 1
    return None


# RE2 errors that only say the input ended early: a prefix cut before an re2j-only error may have them
_END_OF_INPUT = {"missing closing ]", "missing closing )", "trailing backslash at end of expression"}


def _describe(err: Exception) -> str:
    text = err.args[0] if err.args else str(err)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    kind = text.split(": ", 1)[0]
    return _DESCRIPTIONS.get(kind, kind)


@functools.lru_cache(maxsize=1024)
def compile_topic_regex(regex: str) -> "re2._Regexp":
    """The compiled pattern, or InvalidRegularExpression (what RE2J's Pattern.compile rejects)."""
    first = _re2j_only_error(regex)
    if first is not None:
        offset, description = first
        try:
            re2.compile(regex[:offset], options=_OPTIONS)
        except re2.error as err:  # an earlier error, which re2j reports first
            earlier = _describe(err)
            if earlier not in _END_OF_INPUT:
                raise InvalidRegularExpression(regex, earlier) from None
        raise InvalidRegularExpression(regex, description)
    try:
        return re2.compile(regex, options=_OPTIONS)
    except re2.error as err:
        raise InvalidRegularExpression(regex, _describe(err)) from None


def validate(regex: str) -> None:
    """Raise InvalidRegularExpression when the broker would answer INVALID_REGULAR_EXPRESSION."""
    compile_topic_regex(regex)


def matches(regex: str, topic: str) -> bool:
    """RE2J `Pattern.compile(regex).matcher(topic).matches()`."""
    return compile_topic_regex(regex).fullmatch(topic) is not None


def resolve(regex: str, topic_names) -> frozenset[str]:
    """Every name in `topic_names` the regex matches in full (the broker's TopicRegexResolver,
    before its DESCRIBE-authorization filter)."""
    pattern = compile_topic_regex(regex)
    return frozenset(t for t in topic_names if pattern.fullmatch(t) is not None)
