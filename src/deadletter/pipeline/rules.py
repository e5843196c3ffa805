"""Every grouping rule in one table: what is masked as a variable, how text is cut into tokens,
and which varying words still name distinct events. text.py and mining.py apply them.

The same defaults serve every queue: none of these is set per source. Each rule was chosen on
the tuning half of the real labelled logs (tests/data/logs, see docs/pipeline.md) and is kept
only while those scores and the generated corpus's hold; the held-out half is read to report.
Masks are regular-expression source text (not compiled here) so that an engine other than
Python's `re` can run them; they use only lookarounds and classes that Java's regex has too.
"""

from __future__ import annotations

# Masks ---------------------------------------------------------------------------------
# (pattern, replacement, needs, gate): applied in order; a text that lacks `needs` skips the
# pattern (DIGIT: any digit), which saves most of the masking time on short lines, and so does
# a text without a match of `gate` (a regular expression that every match of the pattern
# contains; checked on the text as masked so far): most error lines hold a colon, few a
# colon between digits. Neither changes what is masked, only what is tried. Longer,
# more specific shapes come first so that a URL is not eaten as a path and a timestamp is not
# cut into numbers. Every placeholder is typed so that templates stay readable.
DIGIT = "0-9"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
MASKS: list[tuple[str, str, str, str]] = [
    # A URL may hold blanks inside a path segment ("s3a://lake/raw events/dt=1/"): words
    # joined by single blanks continue it when a slash follows them.
    (
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+(?: [\w.@%+=-]+(?: [\w.@%+=-]+)*/[^\s'\"<>]*)*",
        "<URL>",
        "://",
        "",
    ),
    (r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b", "<EMAIL>", "@", ""),
    (
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        "<UUID>",
        "-",
        "",
    ),
    (
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
        "<TS>",
        ":",
        r"\d:\d",
    ),
    # A date as C's ctime() and Java's Date.toString() write it, one variable however many
    # words: "Fri Jul  1 07:57:30 2005", "Thu Aug 04 15:29:45 PDT 2005". Left alone, its
    # weekday and month are plain words that read as constants and split one event by day.
    (
        rf"\b(?:{_WEEKDAY},?\s+)?{_MONTH}\s+\d{{1,2}},?\s+\d{{1,2}}:\d{{2}}:\d{{2}}(?:[.,]\d+)?"
        r"(?:\s+[A-Z]{3,4})?(?:\s+\d{4})?\b",
        "<TS>",
        ":",
        r"\d:\d",
    ),
    # A date written with slashes or dots before its time, day first or year first, and a
    # time of day with its AM/PM: one variable, so that two ways of writing a time do not
    # split an event ("11/28/2026 10:05:11 AM", "2026/11/28 10:05:11").
    (
        r"\b\d{1,4}[/.]\d{1,2}[/.]\d{1,4}[ T]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?"
        r"(?:\s?[AaPp][Mm]\b)?",
        "<TS>",
        ":",
        r"\d:\d",
    ),
    (r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?(?:\s?[AaPp][Mm])?\b", "<TS>", ":", r"\d:\d"),
    # IPv6 addresses and MAC addresses: four or more hex groups joined by colons.
    (
        r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){3,}[0-9a-fA-F]{1,4}(?![\w:])",
        "<IP>",
        ":",
        "[0-9a-fA-F]:[0-9a-fA-F]",
    ),
    (r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b", "<IP>", ".", ""),
    # host:port, a host name with a dot or a dash (a bare word before a colon is a label).
    (r"(?<![\w.:/-])[A-Za-z][\w-]*(?:[.-][\w-]+)+:\d{2,5}\b", "<IP>", ":", r":\d"),
    # An HTTP request line keeps its method, a constant that tells the event apart.
    (
        r"\b(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) /\S*(?: HTTP/\d(?:\.\d)?)?",
        r"\1 <PATH>",
        " /",
        "",
    ),
    # A path may hold blanks inside a directory name ("/home/bob/Old Projects/api v2/"):
    # words joined by single blanks count as one segment when a slash follows them, and in
    # its file's name when the name ends in an extension ("/mnt/Finance Reports/q3 sum.csv").
    (
        r"(?<![\w.])(?:/[\w.@%+-]+(?: [\w.@%+-]+)*(?=/))+/"
        r"(?:[\w@%+-][\w.@%+-]*(?: [\w@%+-][\w.@%+-]*)*\.[A-Za-z][A-Za-z0-9]{0,7}\b|[\w.@%+-]*)",
        "<PATH>",
        "/",
        "",
    ),
    # The same on Windows: a blank inside a folder's name, not after the file's.
    (r"\b[A-Za-z]:(?:\\[\w.$-]+(?: [\w.$-]+)*(?=\\))*\\[\w.$-]*", "<PATH>", "\\", ""),
    (r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}\b", "<HEX>", DIGIT, ""),
    # A size with its unit, and the rounded size some loggers add in parentheses, is one
    # variable however many tokens it spans: "1190 bytes (1.16 KB)".
    (
        r"(?<![\w.])(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)\s?(?:bytes?|[KMGT]i?B|B)\b"
        r"(?:\s\(\d+(?:\.\d+)?\s?[KMGT]i?B\))?",
        "<SIZE>",
        DIGIT,
        r"[\dA-Fa-f]\s?[bKMGTB]",
    ),
    (
        r"(?<![\w.])[<>]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?)\s?(?:ms|us|µs|ns|s|sec|secs|seconds?|m|mins?|minutes?"
        r"|h|hours?)\b",
        "<DUR>",
        DIGIT,
        r"[\dA-Fa-f]\s?[muµnsh]",
    ),
    # A clock duration ("lifetime 02:19"), after the timestamps took the hh:mm:ss ones.
    (r"(?<![\w:.])\d{1,2}:\d{2}(?![\w:])", "<DUR>", ":", r"\d:\d"),
    # A number written in hex (a size or a duration in hex was read as one above): the miner
    # reads `<HEX>` and `<NUM>` in one place as one variable, so `0x1f` in one message and
    # `31` in another do not split an event.
    (r"\b0x[0-9a-fA-F]+\b", "<HEX>", "0x", ""),
]

# (pattern, needs): a text in which no pattern of SPANS is found (or whose `needs` it lacks;
# an empty pattern: `needs` alone is enough) has no match of any mask, nor of QUOTED, that
# holds a separator of TOKEN_SPLIT: there, masking each token alone gives the tokens of
# masking the whole text, so text.tokenize splits first and masks only the tokens it has not
# seen. Each entry stands for the masks that may cross a separator: quotes and Windows paths;
# `::`; URLs and request lines; a path with a blank inside; a size's rounded value in
# parentheses; timestamps (their gate); a size or a duration with a blank before its unit.
SPANS: list[tuple[str, str]] = [
    ("", "'"),
    ("", '"'),
    ("", "\\"),
    ("", "::"),
    ("", "://"),
    (r"\s/|\s[\w.@%+-]+/", "/"),
    (r"\s\(\d", "("),
    (r"\d:\d", ":"),
    (
        r"(?:\d|0x[0-9a-fA-F]+)\s(?:[bKMGTB]|(?:ms|us|µs|ns|s|sec|secs|seconds?|m|mins?|minutes?"
        r"|h|hours?)\b)",
        "",
    ),
    ("", "`"),
]

# Quoted text is masked unless it is a bare identifier or key path ('customer.id') or a
# request line: such a name tells which bug it is, while a quoted value ('abc 12') tells
# which instance.
QUOTED = r"`([^`'\n]{0,200})['`]|'([^'\n]{0,200})'|\"([^\"\n]{0,200})\""
QUOTED_KEPT = r"^[A-Za-z_][A-Za-z_.\[\]-]*$|^(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) <PATH>$"

# A tag naming a class of errors in capitals, its words joined by underscores, keeps its
# digits: `_LEGACY_ERROR_TEMP_2033` names which error it is, as a word does; an id has one
# word at most (`ORD_48213`).
CLASS_TAG = r"^_?[A-Z][A-Z]+(?:_[A-Z0-9]+)*_[A-Z][A-Z]+(?:_[A-Z0-9]+)*$"
# A wrapped cause: after ": ", an exception's name (qualified or not) and its own ": ".
# From there the text is another error's, one variable (text.tokenize).
CAUSE = (
    r"(?<=\S): (?=(?:[A-Za-z_$][\w$]*\.)*[A-Z][\w$]*(?:Exception|Error|Failure|Fault)"
    r"(?::(?:\s|$)|$))"
)

# Tokens --------------------------------------------------------------------------------
TOKEN_SPLIT = r"[\s,;=()\[\]{}|]+|::"
EDGE_PUNCT = '.:!?"`'
NUMBER = r"^[-+]?\d+(?:[.,]\d+)*%?$"

# A leading component name, `<program>: <message>`: one word of a program's or a logger's
# name, then a colon and a blank. It is taken off before masking and kept as one token ending in
# HEAD_MARK; the miner decides from its values whether it names the event or the program.
HEAD = r"^\s*([A-Za-z_][\w.-]*(?:\[\d+\])?):\s+(?=\S)"
HEAD_MARK = ":"
# What follows the last ": " of a message (outside quotes and brackets) is often its detail,
# an error text or a value of several words. text.tokenize marks the place with TAIL_MARK (a
# token the splitter can never produce) and the miner reads the tail as one variable when it
# varies (MANY_VALUES below), as words otherwise.
TAIL_MARK = "::"

# Mining --------------------------------------------------------------------------------
# Share of a sequence's positions that must hold its template's token to join it (Drain's
# similarity threshold).
DEFAULT_THRESHOLD = 0.5
# Drain's tree depth: at most this many leading plain words choose the bucket.
PREFIX_TOKENS = 2
# Words that look like any other variable word to a similarity count but name different
# events: the methods of an HTTP request line (`"GET <PATH>"` and `"POST <PATH>"`).
KEPT_WORDS = frozenset({"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"})
# A varying position whose values are all plain words (`bytes` / `values`), or names written
# in code with a capital or an underscore (`android.intent.action.SCREEN_ON`,
# `'sparkExecutorActorSystem'`), and fewer than this many of them, is read as constants
# naming distinct events: variables nearly always carry digits or take many values. Dotted
# names in lower case alone stay variables: they are host names more often than not.
MIN_VARIABLE_WORDS = 3
# A varying position with exactly RECURRING_VALUES values of any spelling (dotted names,
# quoted names), each seen in MIN_RECURRENCE messages or more, names events: a variable shows
# new values as messages come, the words of two events each recur.
RECURRING_VALUES = 2
MIN_RECURRENCE = 3
# A variable place whose values are at most MAX_SPLIT_VALUES runs of the event's own words,
# each seen in MIN_RECURRENCE messages or more, hides a split when the runs differ in length
# or another such place takes one value for each of its values (purity.split_hidden); a
# template is cut at most MAX_SPLIT_DEPTH times.
MAX_SPLIT_VALUES = 4
MAX_SPLIT_DEPTH = 3
# Capitalised words are enumerations (`VM Paused` / `Resumed` / `Started` / `Stopped`) up to
# this many values; user and host names are lower case, and codes in capitals (`DHL` / `UPS`,
# `EUR` / `USD`) are values.
MAX_STATE_WORDS = 6
# The same set of words cutting clusters apart in this many places is read as the values of a
# variable instead (names of users or hosts recur wherever a name goes; the words that name
# events belong to one message).
MIN_NAME_REUSE = 2
# A leading component name or a tail (see HEAD, TAIL_MARK) is a variable when over one
# template's messages it takes at least MANY_VALUES values, or at least MIN_VARIANT_VALUES
# with one of them seen once; a few values that each recur name events (`Error:` /
# `Warning:`; `unexpected EOF while looking for: X` / `: Y`). A tail is a variable only after
# a stem of at least MIN_STEM_CONSTANTS words: without them the event has no name.
MANY_VALUES = 6
MIN_VARIANT_VALUES = 3
MIN_STEM_CONSTANTS = 2
# A run of words that varies between a shared start and end is one variable when the start
# and the end hold at least this many constants (phrases._free_runs), unless its runs fall
# into structures (one length, one first word) that each recur in MIN_RECURRENCE messages.
MIN_FRAME_CONSTANTS = 3
# Templates longer than this many tokens are not searched for runs of free text.
MAX_FRAME_TOKENS = 40
# At most this many passes of the merge across buckets (drain._across_buckets).
MAX_PASSES = 3
WORD = r"^[A-Za-z][A-Za-z_-]*$"
CODE_NAME = r"^'?[A-Za-z][A-Za-z_.:$-]*'?$"
STATE_WORD = r"^[A-Z][a-z]+$"
