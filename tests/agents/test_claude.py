def test_a_cut_stream_json_line_is_summarised_not_shown_raw() -> None:
    from ralph_lsp.agents.base import LogLine
    from ralph_lsp.agents.claude import ClaudeParser

    line = '{"type":"user","message":{"content":"' + "x" * 5000 + " … [123456 more bytes]"
    events = ClaudeParser().feed("stdout", line)
    assert len(events) == 1
    assert isinstance(events[0], LogLine) and events[0].kind == "info"
    assert "was cut" in events[0].text and '{"type"' not in events[0].text
