"""Claude Code ``--output-format stream-json --verbose`` output → agent events.

One JSON object per stdout line, by ``type`` (unknown types and fields are ignored):

- ``system``/``init`` → a short info line (version, model, permission mode, cwd); its ``cwd``
  makes tool paths relative. ``system``/``api_retry`` → ``API retry 2/10 in 1.2s: 429
  rate_limit``; a retry caused by a 401 (a bad key, which the CLI also retries) is an ``auth``
  problem at once; a second retry with no HTTP answer at all is ``offline`` (the API cannot be
  reached; the CLI gives up by itself after about three minutes).
- ``assistant`` → its text (one line per text line), ``→ Edit <path>`` / ``$ <command>`` /
  ``→ Grep <pattern>`` / ``→ <Tool>`` plus an :class:`Activity` per tool call; thinking is
  skipped. Its ``error`` field (``authentication_failed``, ``rate_limit``, ``server_error`` with
  529/Overloaded, ``billing_error``) classifies failures.
- ``user`` tool results with ``is_error`` → ``✗ <Tool>: <first line>``.
- ``result`` → :class:`ResultInfo` and ``iteration summary: 12.3s · 5 turns · $0.0123``; when
  ``is_error`` (judged by ``is_error``, never by ``subtype``) its ``api_error_status`` and text
  classify failures too.
- ``stream_event`` (partial messages) is ignored: the complete ``assistant`` event follows.

Any non-JSON stdout line is shown as it is (``raw``). Every stderr line is shown (``stderr``);
the CLI's refusals of its flags (``… cannot be used with root/sudo privileges``,
``--output-format=stream-json requires --verbose``, unknown options, a missing prompt) are also a
``fatal`` problem, and login failures an ``auth`` problem.

Usage-limit messages (``Claude AI usage limit reached|<epoch>``, ``You've hit your limit ·
resets 3pm (Europe/Paris)``, ``Claude usage limit reached. Your limit will reset at 9am``) are
``rate_limit`` problems with the reset time when one is named. To avoid mistaking the agent's own
prose for a failure, texts are only classified when the CLI marked them as errors (an assistant
``error`` field or synthetic message, a result with ``is_error``), except the unmistakable
``usage limit reached|<epoch>`` form.

A parser emits each kind of problem once; a second ``rate_limit`` is emitted only when it names
a reset time the first one lacked (the engine should use the latest).
"""

from __future__ import annotations

import re
from typing import Any

from ralph_lsp.agents._json import (
    get_bool,
    get_cost,
    get_dict,
    get_float,
    get_int,
    get_list,
    get_str,
    parse_object,
    text_of,
)
from ralph_lsp.agents.base import (
    Activity,
    AgentEvent,
    AgentProblem,
    LineParser,
    LogLine,
    ProblemKind,
    Refusal,
    ResultInfo,
    clean_text,
    first_line,
    log_line,
    log_lines,
)
from ralph_lsp.agents.limits import retry_at_from_text

#: The ``type`` values of Claude Code stream-json (the ``custom`` parser sniffs for these).
CLAUDE_EVENT_TYPES = frozenset({"system", "assistant", "user", "result", "stream_event"})

_PATH_TOOLS = {"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead"}
_PATTERN_TOOLS = {"Grep", "Glob"}
_DETAIL_KEYS = {
    "LS": "path",
    "WebFetch": "url",
    "WebSearch": "query",
    "Task": "description",
    "Agent": "description",
    "Skill": "skill",
}

# stderr texts that mean the CLI refused to start with these flags/arguments.
# the marker the process reader puts after a line it had to cut
_CUT_RE = re.compile(r"… \[\d+ more bytes\]$")
_FATAL_STDERR_RE = re.compile(
    r"cannot be used with root/sudo privileges"
    r"|requires --verbose"
    r"|^\s*error: unknown option"
    r"|^\s*error: option .* argument .* is invalid"
    r"|^\s*error: (?:required option|missing required argument|too many arguments)"
    r"|Input must be provided either through stdin or as a prompt argument"
    r"|requires Node(?:\.js)? (?:version )?\d+",
    re.IGNORECASE,
)
# Login failures, in any text the CLI marked as an error (and on its stderr).
_AUTH_RE = re.compile(
    r"not logged in|please run /login|invalid api key|authentication_error"
    r"|oauth token (?:has )?(?:expired|revoked)|invalid bearer token|authentication failed",
    re.IGNORECASE,
)
# Usage-limit wording; the bar form is unmistakable anywhere, the rest only in error texts.
_USAGE_LIMIT_BAR_RE = re.compile(r"usage limit reached\s*\|\s*\d{10,13}", re.IGNORECASE)
_USAGE_LIMIT_RE = re.compile(
    r"usage limit reached|limit will reset|(?:hit|reached) your (?:\w+[ -])*limit"
    r"|limit reached\s*[·∙•|-]\s*resets?|out of (?:extra )?usage|\blimit\b.{0,40}\bresets?\s+\d",
    re.IGNORECASE,
)
_RATE_RE = re.compile(r"\b429\b|rate[ _]limit|too many requests|\b529\b|overloaded", re.IGNORECASE)
_BILLING_RE = re.compile(r"credit balance is too low|billing", re.IGNORECASE)
_TOOL_ERROR_TAG_RE = re.compile(r"</?tool_use_error>")
# What Claude Code answers a tool call its permissions refuse, headless.
_REFUSED_RE = re.compile(
    r"requested permissions to use|haven't granted it yet|^This command requires approval"
    r"|permission to use \w+ (?:was|has been) denied",
    re.I,
)


def _tool_input(name: str, params: dict[str, Any]) -> str:
    """What a refused call asked for, as a permission rule writes it: Bash's command, a file."""
    if name == "Bash":
        return first_line(get_str(params, "command") or "", 300)
    return get_str(params, "file_path") or get_str(params, "notebook_path") or ""


def _fmt_seconds(ms: float) -> str:
    seconds = ms / 1000.0
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, sec = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{sec:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def summary_line(
    duration_ms: float | None,
    num_turns: int | None,
    cost_usd: float | None,
    extra: list[str] | None = None,
) -> LogLine:
    """``iteration summary: 12.3s · 5 turns · $0.0123`` (missing parts are left out)."""
    parts: list[str] = []
    if duration_ms is not None and duration_ms >= 0:
        parts.append(_fmt_seconds(duration_ms))
    if num_turns is not None:
        parts.append(f"{num_turns} turn" + ("" if num_turns == 1 else "s"))
    if cost_usd is not None:
        parts.append(f"${cost_usd:.4f}")
    parts.extend(extra or [])
    return log_line("iteration summary: " + (" · ".join(parts) if parts else "done"), "summary")


def relative_path(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it lies under it, else unchanged."""
    if not cwd or not path:
        return path
    base = cwd.rstrip("/")
    if not base:
        return path
    if path == base:
        return "."
    if path.startswith(base + "/"):
        return path[len(base) + 1 :]
    return path


class ProblemGate:
    """Emits each kind of problem once (a ``rate_limit`` again only when it adds a reset time)."""

    def __init__(self) -> None:
        self._seen: dict[str, AgentProblem] = {}

    def __call__(
        self, kind: ProblemKind, message: str, retry_at: float | None = None
    ) -> list[AgentEvent]:
        message = clean_text(message, 500) or kind
        prior = self._seen.get(kind)
        if prior is not None and not (
            kind == "rate_limit" and prior.retry_at is None and retry_at is not None
        ):
            return []
        problem = AgentProblem(kind, message, retry_at)
        self._seen[kind] = problem
        return [problem]

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(self._seen)


def main_model(per_model: dict[str, Any] | None) -> str | None:
    """The model that did most of the work in a result's per-model usage (Claude's
    ``modelUsage``, Gemini's ``stats.models``): the one with the most output tokens."""
    best: tuple[int, str] | None = None
    for name, usage in (per_model or {}).items():
        if not isinstance(name, str) or not name or name == "<synthetic>":
            continue
        out = 0
        if isinstance(usage, dict):
            for key in ("outputTokens", "output_tokens", "candidates"):
                v = usage.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    out = v
                    break
            tokens = usage.get("tokens")
            if isinstance(tokens, dict) and isinstance(tokens.get("candidates"), int):
                out = tokens["candidates"]
        if best is None or out > best[0]:
            best = (out, name)
    return clean_text(best[1], 200) if best else None


class ClaudeParser(LineParser):
    """Parses Claude Code stream-json (also the demo agent's output). Never raises."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd
        self._tools: dict[str, str] = {}  # tool_use id → tool name
        self._inputs: dict[str, str] = {}  # tool_use id → its command or file, for refusals
        self._refused: set[str] = set()  # tool_use ids already reported refused
        self._problem = ProblemGate()
        self.saw_result = False
        self.model: str | None = None  # the init event's model, until the result names one

    # -- the protocol ------------------------------------------------------------------------

    # -- stdout / stderr ---------------------------------------------------------------------

    def feed_stdout(self, line: str) -> list[AgentEvent]:
        obj = parse_object(line)
        if obj is None:
            if line.startswith("{") and _CUT_RE.search(line[-80:]):
                # a stream-json event longer than the reader keeps: never show it as raw JSON
                return [
                    LogLine(f"(a stream-json event of {len(line):,}+ characters was cut)", "info")
                ]
            return [log_line(line, "raw")] if line.strip() else []
        return self.handle(obj)

    def feed_stderr(self, line: str) -> list[AgentEvent]:
        events: list[AgentEvent] = [log_line(line, "stderr")]
        text = line[:4000]
        if _FATAL_STDERR_RE.search(text):
            events += self._problem("fatal", text.strip())
        elif _AUTH_RE.search(text):
            events += self._problem("auth", text.strip())
        elif _USAGE_LIMIT_BAR_RE.search(text) or _USAGE_LIMIT_RE.search(text):
            events += self._problem("rate_limit", text.strip(), retry_at_from_text(text))
        return events

    def handle(self, obj: dict[str, Any]) -> list[AgentEvent]:
        """Events for one decoded stream-json object."""
        kind = get_str(obj, "type")
        if kind == "system":
            return self._system(obj)
        if kind == "assistant":
            return self._assistant(obj)
        if kind == "user":
            return self._user(obj)
        if kind == "result":
            return self._result(obj)
        return []  # stream_event and anything unknown

    # -- event types -------------------------------------------------------------------------

    def _system(self, obj: dict[str, Any]) -> list[AgentEvent]:
        subtype = get_str(obj, "subtype")
        if subtype == "init":
            cwd = get_str(obj, "cwd")
            if cwd:
                self.cwd = cwd
            parts: list[str] = []
            version = get_str(obj, "claude_code_version")
            if version:
                parts.append(f"Claude Code {version}")
            model = get_str(obj, "model")
            if model:
                self.model = model
                parts.append(f"model {model}")
            mode = get_str(obj, "permissionMode")
            if mode:
                parts.append(f"permission mode {mode}")
            if cwd:
                parts.append(f"cwd {cwd}")
            return [log_line("agent started: " + (", ".join(parts) or "init"), "info")]
        if subtype == "api_retry":
            return self._api_retry(obj)
        return []

    def _api_retry(self, obj: dict[str, Any]) -> list[AgentEvent]:
        attempt = get_int(obj, "attempt")
        max_retries = get_int(obj, "max_retries")
        delay_ms = get_float(obj, "retry_delay_ms")
        status = get_int(obj, "error_status")
        error = get_str(obj, "error")
        text = "API retry"
        if attempt is not None:
            text += f" {attempt}" + (f"/{max_retries}" if max_retries is not None else "")
        if delay_ms is not None:
            text += f" in {delay_ms / 1000.0:.1f}s"
        reason = " ".join(p for p in (str(status) if status is not None else None, error) if p)
        if reason:
            text += f": {reason}"
        events: list[AgentEvent] = [log_line(text, "info")]
        if status == 401 or error == "authentication_failed":
            events += self._problem("auth", f"authentication failed (HTTP {status or 401})")
        elif status is None and (attempt or 0) >= 2:
            # Retries with no HTTP answer at all: the API cannot be reached (Claude Code keeps
            # trying for about three minutes). One such retry is a blip; two say so.
            events += self._problem(
                "offline",
                f"Claude Code gets no answer from its API (retry {attempt}"
                + (f" of {max_retries})" if max_retries is not None else ")"),
            )
        return events

    def _assistant(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = get_dict(obj, "message") or {}
        events: list[AgentEvent] = []
        texts: list[str] = []
        for block in get_list(message, "content"):
            btype = get_str(block, "type")
            if btype == "text":
                text = get_str(block, "text") or ""
                texts.append(text)
                events += log_lines(text, "text")
            elif btype == "tool_use":
                events += self._tool_use(block)
        error = get_str(obj, "error")
        synthetic = get_str(message, "model") == "<synthetic>"
        joined = "\n".join(texts)
        if error or synthetic:
            events += self._classify_error(error, None, joined)
        elif _USAGE_LIMIT_BAR_RE.search(joined[:4000]):
            events += self._problem("rate_limit", joined, retry_at_from_text(joined))
        return events

    def _tool_use(self, block: dict[str, Any]) -> list[AgentEvent]:
        name = get_str(block, "name") or "tool"
        tool_id = get_str(block, "id")
        params = get_dict(block, "input") or {}
        if tool_id:
            self._tools[tool_id] = name
            self._inputs[tool_id] = _tool_input(name, params)
        events: list[AgentEvent] = [Activity()]
        if name == "Bash":
            command = get_str(params, "command") or ""
            events.append(log_line("$ " + first_line(command, 1000), "command"))
            return events
        detail: str | None = None
        if name in _PATH_TOOLS:
            path = get_str(params, "file_path") or get_str(params, "notebook_path")
            detail = relative_path(path, self.cwd) if path else None
        elif name in _PATTERN_TOOLS:
            detail = get_str(params, "pattern")
        elif name in _DETAIL_KEYS:
            detail = get_str(params, _DETAIL_KEYS[name])
        line = f"→ {name}" + (f" {first_line(detail, 500)}" if detail else "")
        events.append(log_line(line, "tool"))
        return events

    def _user(self, obj: dict[str, Any]) -> list[AgentEvent]:
        message = get_dict(obj, "message") or {}
        events: list[AgentEvent] = []
        for block in get_list(message, "content"):
            if get_str(block, "type") != "tool_result" or get_bool(block, "is_error") is not True:
                continue
            tool_id = get_str(block, "tool_use_id") or ""
            name = self._tools.get(tool_id, "tool")
            detail = first_line(_TOOL_ERROR_TAG_RE.sub("", text_of(block.get("content"))), 300)
            events.append(log_line(f"✗ {name}: {detail or 'failed'}", "tool"))
            if _REFUSED_RE.search(detail) and tool_id not in self._refused:
                self._refused.add(tool_id)
                events.append(Refusal(name, self._inputs.get(tool_id, "")))
        return events

    def _result(self, obj: dict[str, Any]) -> list[AgentEvent]:
        self.saw_result = True
        subtype = get_str(obj, "subtype")
        is_error = get_bool(obj, "is_error")
        if is_error is None:
            is_error = subtype is not None and subtype != "success"
        text = get_str(obj, "result")
        errors = [e for e in get_list(obj, "errors") if isinstance(e, str)]
        if text is None and errors:
            text = "; ".join(errors)
        usage = get_dict(obj, "usage")
        cost, refused = get_cost(obj, "total_cost_usd")
        info = ResultInfo(
            is_error=is_error,
            cost_usd=cost,
            num_turns=get_int(obj, "num_turns"),
            usage=usage,
            duration_ms=get_int(obj, "duration_ms"),
            text=text,
            model=main_model(get_dict(obj, "modelUsage")) or self.model,
        )
        events: list[AgentEvent] = [info]
        if refused is not None:
            refusal = f"{refused}: refused, so this iteration's cost is unknown"
            events.append(log_line(refusal, "info"))
        for err in errors[:20]:
            events.append(log_line(err, "info"))
        for d in get_list(obj, "permission_denials"):  # those not seen in a tool result
            if not isinstance(d, dict) or (get_str(d, "tool_use_id") or "") in self._refused:
                continue
            tool = get_str(d, "tool_name") or "tool"
            self._refused.add(get_str(d, "tool_use_id") or f"denial-{len(self._refused)}")
            events.append(Refusal(tool, _tool_input(tool, get_dict(d, "tool_input") or {})))
        extra: list[str] = []
        if is_error:
            label = subtype if subtype and subtype != "success" else "error"
            if text and not errors:
                label += ": " + first_line(text, 160)
            extra.append(label)
        events.append(summary_line(info.duration_ms, info.num_turns, info.cost_usd, extra))
        if is_error:
            events += self._classify_error(None, get_int(obj, "api_error_status"), text or "")
        elif text and _USAGE_LIMIT_BAR_RE.search(text[:4000]):
            events += self._problem("rate_limit", text, retry_at_from_text(text))
        return events

    def _classify_error(self, error: str | None, status: int | None, text: str) -> list[AgentEvent]:
        """Problems for a text the CLI marked as an error (assistant ``error`` or synthetic
        message, or a result with ``is_error``)."""
        text = text[:4000]
        message = first_line(text, 500)
        if error == "authentication_failed" or status == 401 or _AUTH_RE.search(text):
            return self._problem("auth", message or "authentication failed")
        limit = _USAGE_LIMIT_BAR_RE.search(text) or _USAGE_LIMIT_RE.search(text)
        overloaded = status == 529 or (
            error == "server_error" and re.search(r"\b529\b|overloaded", text, re.IGNORECASE)
        )
        if limit or error == "rate_limit" or status == 429 or overloaded:
            return self._problem("rate_limit", message or "rate limited", retry_at_from_text(text))
        if error is None and status is None and _RATE_RE.search(text) and len(text) < 400:
            return self._problem("rate_limit", message, retry_at_from_text(text))
        if error == "billing_error" or ((error or status is not None) and _BILLING_RE.search(text)):
            return self._problem("fatal", message or "billing error")
        return []
