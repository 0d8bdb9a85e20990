"""The requests of a serving run, read from a request trace (docs/serving.md, "Requests").

A trace is a CSV file with one request per row, in one of two forms:

    Azure LLM inference trace   TIMESTAMP, ContextTokens, GeneratedTokens
                                (TIMESTAMP like 2023-11-16 18:15:46.6805900, no time zone)
    plain                       arrival_s, prompt_tokens, output_tokens

What a request is made of: its arrival (seconds after the first selected request's), its prompt
length (tokens prefilled) and its output length (tokens generated, the first one by the prefill).
What a trace does not carry and the run assumes: the tokens themselves (a timing run needs none),
the MoE routing (from the model's routing trace: stepsim.serving.models), priorities (first come,
first served) and any cancellation (every request runs to its output length).
"""
import csv
import datetime

from .. import _stepsim

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
PLAIN_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
# A prompt or an output longer than this is not a request of any model we can model (and a
# typo such as an extra digit would otherwise start a run of days).
MAX_TOKENS = 1 << 20
MAX_REQUESTS = 1 << 20


class Request:
    """One request: `index` (0-based, in the run), `row` (1-based data row of the trace),
    `arrival_s` (seconds after the first selected request), `prompt` and `output` (tokens)."""

    __slots__ = ("index", "row", "arrival_s", "prompt", "output")

    def __init__(self, index, row, arrival_s, prompt, output):
        self.index, self.row, self.arrival_s, self.prompt, self.output = index, row, arrival_s, prompt, output

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "Request(%d: row %d, at %.6f s, %d prompt, %d output tokens)" % (
            self.index, self.row, self.arrival_s, self.prompt, self.output)


def load_requests(path, first_row=1, count=None, time_scale=1.0):
    """The requests of data rows first_row..first_row+count-1 (1-based; count None = to the end)
    of the trace at `path`, arrivals multiplied by `time_scale` (0.5 = twice the request rate).
    Every fault is a stepsim.Error naming the file and the row."""
    path = _stepsim.resolve_path(str(path), ".")
    if not isinstance(first_row, int) or first_row < 1:
        raise _stepsim.Error("requests %s: the first row must be an integer >= 1, not %r" % (path, first_row))
    if count is not None and (not isinstance(count, int) or not 1 <= count <= MAX_REQUESTS):
        raise _stepsim.Error("requests %s: the request count must be in 1..%d, not %r" % (path, MAX_REQUESTS, count))
    if not isinstance(time_scale, (int, float)) or not 0 < time_scale <= 1e6:
        raise _stepsim.Error("requests %s: the time scale must be a number in (0, 1e6], not %r" % (path, time_scale))
    header, rows = _read_csv(path)
    columns = _columns(path, header)
    last = len(rows) if count is None else first_row + count - 1
    if first_row > len(rows) or last > len(rows):
        raise _stepsim.Error("requests %s: rows %d..%d are asked for; the file has %d data rows"
                             % (path, first_row, last, len(rows)))
    requests, start, previous = [], None, None
    for row in range(first_row, last + 1):
        cells = rows[row - 1]
        if len(cells) != len(header):
            raise _stepsim.Error("requests %s: data row %d has %d cells, the header %d" % (path, row, len(cells),
                                                                                          len(header)))
        t = _arrival(path, row, columns, cells)
        if previous is not None and t < previous:
            raise _stepsim.Error("requests %s: data row %d arrives before row %d (%s < %s): the trace must be "
                                 "sorted by arrival" % (path, row, row - 1, cells[columns[0]],
                                                        rows[row - 2][columns[0]]))
        previous = t
        start = t if start is None else start
        prompt = _tokens(path, row, header[columns[1]], cells[columns[1]], 1)
        output = _tokens(path, row, header[columns[2]], cells[columns[2]], 1)
        requests.append(Request(len(requests), row, (t - start) * time_scale, prompt, output))
    return requests


def _read_csv(path):
    try:
        with open(path, newline="") as f:
            text = f.read(64 << 20)
            if f.read(1):
                raise _stepsim.Error("requests %s: larger than 64 MiB; select a part of it first" % path)
    except OSError as e:
        raise _stepsim.Error("requests %s: cannot read it: %s" % (path, e.strerror)) from None
    except UnicodeDecodeError:
        raise _stepsim.Error("requests %s: not a text (UTF-8) CSV file" % path) from None
    lines = list(csv.reader(text.splitlines()))
    if not lines:
        raise _stepsim.Error("requests %s: the file is empty" % path)
    header = [h.strip() for h in lines[0]]
    if len(set(header)) != len(header):
        raise _stepsim.Error("requests %s: a column name appears twice in the header (%s)" % (path, ", ".join(header)))
    return header, [[c.strip() for c in r] for r in lines[1:] if any(c.strip() for c in r)]


def _columns(path, header):
    """The positions of (arrival, prompt, output), from whichever form the header is."""
    for names in (AZURE_COLUMNS, PLAIN_COLUMNS):
        if all(n in header for n in names):
            return [header.index(n) for n in names]
    azure_missing = [n for n in AZURE_COLUMNS if n not in header]
    plain_missing = [n for n in PLAIN_COLUMNS if n not in header]
    raise _stepsim.Error("requests %s: missing column(s) %s (an Azure trace has %s; a plain one %s); the header "
                         "is: %s" % (path, ", ".join(min(azure_missing, plain_missing, key=len)),
                                     ", ".join(AZURE_COLUMNS), ", ".join(PLAIN_COLUMNS), ", ".join(header)))


def _arrival(path, row, columns, cells):
    text = cells[columns[0]]
    try:
        if "-" in text[1:] and ":" in text:  # an Azure TIMESTAMP; 7 fractional digits are more than Python parses
            day, _, frac = text.partition(".")
            stamp = datetime.datetime.strptime(day, "%Y-%m-%d %H:%M:%S")
            seconds = stamp.replace(tzinfo=datetime.timezone.utc).timestamp()
            return seconds + (float("0." + frac) if frac else 0.0)
        value = float(text)
    except ValueError:
        raise _stepsim.Error("requests %s: data row %d: arrival '%s' is neither a time stamp (YYYY-MM-DD "
                             "HH:MM:SS.FFF) nor a number of seconds" % (path, row, text)) from None
    if not value == value or value < 0 or value > 1e9:
        raise _stepsim.Error("requests %s: data row %d: arrival %s s is not in 0..1e9" % (path, row, text))
    return value


def _tokens(path, row, column, text, lowest):
    try:
        n = int(text)
    except ValueError:
        raise _stepsim.Error("requests %s: data row %d: %s '%s' is not a whole number of tokens"
                             % (path, row, column, text)) from None
    if not lowest <= n <= MAX_TOKENS:
        raise _stepsim.Error("requests %s: data row %d: %s is %d; it must be in %d..%d tokens"
                             % (path, row, column, n, lowest, MAX_TOKENS))
    return n
