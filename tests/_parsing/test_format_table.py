"""The kinds issue 45's cases came with, each with other members of it, read by the text parser,
the reply reader (the native loop's) and the argument check; and the format table they are rows of.

Kinds: a known format's markup under another vendor's prefix (LongCat's GLM tags), a call with
no markup (GLM-4-0414's name line, an XML element named after a tool), a tag that lost its
``>`` (Llama's ``<function=NAME{...}``), a reasoning block in a vendor's own markers or closed
by a differently spelled tag, a vendor's channel name where a tool's belongs, an entity-escaped
value, a lone surrogate. Every refusal says what happened, never a guess at a token limit.
"""

import ast
import html
import json
import pathlib

import pytest
from helpers.parsing_checks import GENERIC, one_line_reason
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from react_lab._parsing import formats
from react_lab._parsing.calls import TOOL_NAME
from react_lab._parsing.formats import CHANNELS, FORMATS, find_calls
from react_lab._parsing.leaks import find_leaks
from react_lab._parsing.reasoning import set_aside_reasoning
from react_lab.lab.agent.parser import parse, read_reply
from react_lab.lab.cli import tool_names
from react_lab.messages import leak_problems
from react_lab.schema import check_arguments
from react_lab.tools import default_tools

W = ["search", "get_weather", "weather", "message", "Bash"]
TOOLS = default_tools()


def leaked(text, tools=W):
    return [
        (x.call["function"]["name"], json.loads(x.call["function"]["arguments"]))
        for x in find_leaks(text, tools)
        if x.problem is None
    ]


# ---- the table -----------------------------------------------------------------------------


def test_every_row_names_its_format_and_reads_with_a_known_shape():
    shapes = {"channels", "section", "sections", "glued", "mistral", "elements", "named"}
    shapes |= {"stripped", "element", "mixed", "json", "keyed", "code", "pairs"}
    for row in FORMATS:
        assert row.name and row.opens and row.shape in shapes, row
        assert row.values in ("json", "schema"), row
    # entities are decoded only where the markup escapes them: the rows that say so
    assert [r.name for r in FORMATS if r.entities] == ["XML element"]
    assert CHANNELS == {
        "analysis": "Harmony",
        "commentary": "Harmony",
        "final": "Harmony",
        "thought": "Gemma",
    }


# ---- a known layout under another vendor's prefix, a call with no markup --------------------

TAKEN = {
    "LongCat, two pairs": (
        "<longcat_tool_call>get_weather <longcat_arg_key>city</longcat_arg_key> "
        "<longcat_arg_value>Berlin</longcat_arg_value><longcat_arg_key>days</longcat_arg_key>"
        "<longcat_arg_value>3</longcat_arg_value></longcat_tool_call>",
        "get_weather",
        {"city": "Berlin", "days": 3},
    ),
    "LongCat, </longcat_arg_value> left out before the closing tag": (
        "<longcat_tool_call>search<longcat_arg_key>query</longcat_arg_key>"
        "<longcat_arg_value>refunds</longcat_tool_call>",
        "search",
        {"query": "refunds"},
    ),
    "GLM-4-0414, fenced-free object over lines": (
        'search\n{\n  "query": "refund policy"\n}\n',
        "search",
        {"query": "refund policy"},
    ),
    "XML element named after the tool (Cline's form)": (
        "<get_weather>\n<city>Berlin</city>\n<days>3</days>\n</get_weather>",
        "get_weather",
        {"city": "Berlin", "days": 3},
    ),
    "XML element, its value XML-escaped (decoded once)": (
        "<Bash><command>cd /tmp &amp;&amp; ls &lt;dir&gt; &#39;x&#39; &#x27;y&#x27;</command>"
        "</Bash>",
        "Bash",
        {"command": "cd /tmp && ls <dir> 'x' 'y'"},
    ),
    "Llama <function=NAME{...}>, '>' left out, no stray text": (
        '<function=search{"query": "refunds"}</function>',
        "search",
        {"query": "refunds"},
    ),
    "Llama <function=NAME>, a run of dashes after the object": (
        '<function=search>{"query": "refunds"}----</function>',
        "search",
        {"query": "refunds"},
    ),
}


@pytest.mark.parametrize("member", TAKEN)
def test_a_member_is_read_the_same_by_the_parser_and_the_reply_reader(member):
    text, tool, args = TAKEN[member]
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", tool, args), r
    assert leaked(text) == [(tool, args)]


REFUSED = {
    # a declared tool's name only: an undeclared name line is no call, and its refusal says
    # the name is there (not "a call whose name was lost")
    "GLM-4-0414, the name line names no declared tool": (
        'get_weather\n{"city": "Paris"}',
        ["search"],
        ["'get_weather'", "name line"],
    ),
    "GLM-4-0414, prose after the object (not the whole reply)": (
        'search\n{"query": "x"}\nThen I will answer.',
        W,
        [],
    ),
    "Llama <function=NAME{...}>, words after the object": (
        '<function=search{"query": "refunds"} and then more</function>',
        W,
        ["Llama 3.1", "'search'", "text after its arguments"],
    ),
    "XML element with no closing tag": (
        "<search><query>refunds</query>",
        W,
        ["XML element", "no closing tag </search>"],
    ),
    "LongCat, a value with no closing tag and no closing frame": (
        "<longcat_tool_call>search<longcat_arg_key>query</longcat_arg_key><longcat_arg_value>refu",
        W,
        ["LongCat", "'query'", "no closing tag"],
    ),
}


@pytest.mark.parametrize("member", REFUSED)
def test_a_member_that_is_not_a_whole_call_is_refused_saying_so(member):
    text, tools, words = REFUSED[member]
    r = parse(text, tools=tools)
    assert r.kind == "error" and GENERIC not in one_line_reason(r), r
    assert all(w in r.reason for w in words), r.reason
    assert "cut off" not in r.reason  # no finish reason: what is missing, not a guess
    assert leaked(text, tools) == []


def test_without_the_tools_a_name_line_and_an_object_is_not_run_and_the_name_is_said():
    r = parse('get_weather\n{"location": "Paris"}')
    assert r.kind == "error" and "'get_weather'" in r.reason and "was lost" not in r.reason


# ---- a refusal's reason is what happened ---------------------------------------------------


@pytest.mark.parametrize(
    "text,words",
    [
        ("<tool_call>\n<function=search>\n<parameter=query>\nrefu", ["no closing tag"]),
        ("<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>", ["no closing"]),
        ("Thought: I need to look", ["mid-sentence"]),
        ("Sure", ["bare 'Sure'", "no Action or Answer label"]),
    ],
)
def test_cut_off_by_the_token_limit_is_said_only_when_the_finish_reason_says_length(text, words):
    r = parse(text, tools=W)
    assert all(w in one_line_reason(r) for w in words) and "token limit" not in r.reason, r.reason
    cut = parse(text, tools=W, finish_reason="length", max_tokens=64)
    assert "cut at the token limit (64 tokens)" in one_line_reason(cut)


# ---- a reasoning block in a vendor's markers, or closed by another spelling ------------------


@pytest.mark.parametrize(
    "text,closed_by",
    [
        ("<think>I should check.</thinking>\nAnswer: 4", "</thinking>"),
        ("<thinking>I should check.</think>\nAnswer: 4", "</think>"),
        ("<think>I should check.</think >\nAnswer: 4", "</think >"),
        ("<think>I should check.</Think>\nAnswer: 4", "</Think>"),
        ("<seed:think>I should check.</think>\nAnswer: 4", "</think>"),
        ("[THINK]I should check.</think>\nAnswer: 4", "</think>"),
        ("<|channel>thought\nI should check.<channel|>\nAnswer: 4", None),
    ],
)
def test_a_reasoning_block_closed_by_another_spelling_is_set_aside_and_the_answer_read(
    text, closed_by
):
    kept, reasoning, aside = set_aside_reasoning(text)
    assert kept.strip() == "Answer: 4" and "I should check." in reasoning
    assert closed_by is None or f"closed by {closed_by}" in aside
    r = parse(text, tools=W)
    assert (r.kind, r.answer) == ("final", "4") and "I should check." in r.reasoning
    assert read_reply(text, W).answer == "4"


# ---- a vendor's channel name is never a tool ------------------------------------------------


@pytest.mark.parametrize(
    "text,channel,vendor",
    [
        ('commentary{"query": "refunds"}', "commentary", "Harmony"),
        ('analysis("refunds")', "analysis", "Harmony"),
        ("Action: final[refunds]", "final", "Harmony"),
        ('Action: thought({"query": "refunds"})', "thought", "Gemma"),
    ],
)
def test_a_channel_name_where_a_tool_belongs_is_refused_as_the_vendors_channel(
    text, channel, vendor
):
    for tools in (W, None):
        reason = one_line_reason(parse(text, tools=tools))
        assert f"'{channel}' is {vendor}'s channel name" in reason and "unknown tool" not in reason
    # a tool that is declared under that name is that tool
    assert parse(text, tools=[*W, channel]).kind == "action"
    # the native check says the same of a call with that name
    call = {"function": {"name": channel, "arguments": '{"query": "refunds"}'}}
    (problem,) = leak_problems(TOOLS, [call])
    assert f"{vendor}'s channel name" in problem


def test_a_harmony_commentary_message_without_a_recipient_is_a_call_whose_name_was_lost():
    text = '<|channel|>commentary<|message|>{"query": "refunds"}<|call|>'
    reason = one_line_reason(parse(text, tools=W))
    assert "commentary channel with no recipient" in reason and "analysis" not in reason
    assert read_reply(text, W).answer is None and find_leaks(text, W) == []


# ---- an entity-escaped value: decoded where the markup escapes it, else refused --------------

ENTITIES = ["&amp;&amp;", "&quot;x&quot;", "&#39;x&#39;", "&#x27;x&#x27;", "&lt;dir&gt;"]


@pytest.mark.parametrize("entity", ENTITIES)
def test_an_entity_in_a_value_of_a_format_that_does_not_escape_is_refused_naming_it(entity):
    texts = [
        f'<tool_call>{{"name": "search", "arguments": {{"query": "cd {entity} ls"}}}}</tool_call>',
        f"<tool_call>\n<function=search>\n<parameter=query>\ncd {entity} ls\n</parameter>\n"
        "</function>\n</tool_call>",
        f"Action: search[cd {entity} ls]",
        f'Action: search({{"query": "cd {entity} ls"}})',
    ]
    first = entity.split(";")[0] + ";"
    for text in texts:
        reason = one_line_reason(parse(text, tools=W))
        assert "HTML entity" in reason and first in reason, reason
    # the native path: the argument check refuses it, naming the field and the entity
    args, errors = check_arguments(TOOLS["search"], json.dumps({"query": f"cd {entity} ls"}))
    assert errors and errors[0].startswith("query:") and first in errors[0]


def test_text_that_only_looks_like_an_entity_is_kept():
    assert check_arguments(TOOLS["search"], '{"query": "AT&T; R&D &nbsp"}')[1] == []
    assert parse("Action: search[AT&T; R&D]", tools=W).input == "AT&T; R&D"


# ---- a lone surrogate -----------------------------------------------------------------------


@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "x\\udc00y"])
def test_a_lone_surrogate_is_refused_naming_the_argument_in_both_paths(escape):
    arguments = '{"query": "refund ' + escape + '"}'
    args, errors = check_arguments(TOOLS["search"], arguments)
    assert errors and errors[0].startswith("query:") and "lone surrogate" in errors[0]
    for text in (f"Action: search({arguments})", f"<tool_call>{arguments[:-1]}}}</tool_call>"):
        text = f'<tool_call>{{"name": "search", "arguments": {arguments}}}</tool_call>'
        r = parse(text, tools=W)
        assert "lone surrogate" in one_line_reason(r) and "query" in r.reason
        json.dumps(r.__dict__, ensure_ascii=False).encode("utf-8")  # nothing left to break
    # a surrogate pair is a character
    assert check_arguments(TOOLS["search"], '{"query": "refund \\ud83d\\ude00"}')[1] == []


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1))
def test_no_value_holding_a_surrogate_passes_the_check(value):
    args, errors = check_arguments(TOOLS["search"], {"query": "refund " + value})
    assert errors and "lone surrogate" in errors[0]


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["amp", "quot", "lt", "gt", "#39", "#x27", "apos", "nbsp"]),
    st.text(alphabet="abc ", max_size=10),
)
def test_no_value_holding_an_entity_passes_the_check_or_is_changed(name, around):
    value = f"{around}&{name};{around}"
    args, errors = check_arguments(TOOLS["search"], {"query": "q " + value})
    assert errors and "entity" in errors[0]


# ---- one tool-name rule: the CLI, the parser, the native check -------------------------------


def test_the_tool_name_rule_takes_what_openai_and_mcp_accept():
    for name in ["search", "web-search", "files.read", "tool_12", "A" * 128, "2fa"]:
        assert TOOL_NAME.fullmatch(name), name
    for name in ["", "a b", "c;d", "搜索", "A" * 129, "search<|channel|>commentary"]:
        assert not TOOL_NAME.fullmatch(name), name


def test_the_cli_takes_a_hyphenated_and_a_dotted_tool_name():
    assert tool_names("web-search, files.read,calc") == ["web-search", "files.read", "calc"]
    with pytest.raises(Exception, match="OpenAI and MCP"):
        tool_names("web search")


def test_the_parser_takes_a_hyphenated_tool_name():
    r = parse("Action: web-search[refunds]", tools=tool_names("web-search"))
    assert (r.kind, r.tool) == ("action", "web-search")
    assert parse("Action: web-search[refunds]").kind == "action"


def test_the_native_check_refuses_a_name_no_api_accepts_saying_the_rule():
    call = {"function": {"name": "search<|channel|>commentary", "arguments": "{}"}}
    (problem,) = leak_problems(TOOLS, [call])
    assert "is not a tool name" in problem and "OpenAI and MCP" in problem
    call = {"function": {"name": "serch", "arguments": "{}"}}
    assert leak_problems(TOOLS, [call]) == [f"unknown tool 'serch'; available: {', '.join(TOOLS)}"]


def test_find_calls_reads_a_declared_rows_markup_only_with_the_tools():
    text = "<search><query>refunds</query></search>"
    assert find_calls(text) == [] and find_calls(text, tools=["search"])[0].name == "search"


# ---- one property per kind ------------------------------------------------------------------

PROPERTY = settings(max_examples=150, deadline=None)
#: Call shapes a tool's name stands in: the paper's brackets, call syntax, a name glued to its
#: object, a JSON call, a JSON frame.
NAMED_CALLS = [
    "Action: {name}[{arg}]",
    'Action: {name}({{"query": "{arg}"}})',
    '{name}{{"query": "{arg}"}}',
    'Action: {{"action": "{name}", "action_input": {{"query": "{arg}"}}}}',
    '<tool_call>{{"name": "{name}", "arguments": {{"query": "{arg}"}}}}</tool_call>',
]
WORDS = st.text(alphabet="abcxyz 0123", min_size=1, max_size=16).map(str.strip).filter(bool)


@PROPERTY
@given(
    st.sampled_from(sorted(CHANNELS)),
    st.sampled_from(NAMED_CALLS),
    st.sampled_from([str.lower, str.title, str.upper]),
    WORDS,
    st.sampled_from([W, None]),
)
def test_property_a_channel_name_in_any_call_shape_is_the_vendors_channel_never_a_tool(
    channel, shape, case, arg, tools
):
    text = shape.format(name=case(channel), arg=arg)
    reason = one_line_reason(parse(text, tools=tools))
    assert f"is {CHANNELS[channel]}'s channel name" in reason, reason
    assert parse(text, tools=[*W, case(channel)]).kind == "action"  # a declared tool of that name
    call = {"function": {"name": case(channel), "arguments": json.dumps({"query": arg})}}
    (problem,) = leak_problems(TOOLS, [call])
    assert f"{CHANNELS[channel]}'s channel name" in problem


IDENTIFIER = st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True)
PLAIN = st.text(
    alphabet=st.characters(
        blacklist_characters="<>&\u0120\u010a\u2581", blacklist_categories=("Cs", "Cc")
    ),
    min_size=1,
    max_size=24,
).map(str.strip)


@PROPERTY
@given(
    st.from_regex(r"[a-z]{1,6}_[a-z][a-z_]{0,6}", fullmatch=True),  # a tool's name, not a word
    st.dictionaries(IDENTIFIER, PLAIN.filter(bool), min_size=1, max_size=4),
)
@example("a_a", {"a": "[THINK]"})  # found by CI: a reasoning opener as a value, never closed
def test_property_an_element_named_after_a_declared_tool_is_its_call_and_only_then(tool, args):
    assume(tool not in args)
    text = f"<{tool}>" + "".join(f"<{k}>{v}</{k}>" for k, v in args.items()) + f"</{tool}>"
    assume(find_calls(text) == [])  # another row's markup (<tool_call>) is that row's
    schema = {tool: {k: {"type": "string"} for k in args}}
    r = parse(text, tools=schema)
    assert (r.kind, r.tool, r.input) == ("action", tool, args), r
    assert leaked(text, schema) == [(tool, args)]
    assert parse(text, tools=["other"]).kind == "error"  # no declared tool: no call


@PROPERTY
@given(
    st.sampled_from(["<think>", "<thinking>", "<seed:think>", "[THINK]"]),
    st.sampled_from(["think", "thinking", "thought", "seed:think"]),
    st.sampled_from([str.lower, str.title, str.upper]),
    st.sampled_from(["", " ", "\t"]),
    st.text(alphabet="abc xyz.,!?\n", min_size=1, max_size=40).filter(str.strip),
    WORDS,
)
def test_property_a_reasoning_block_closed_by_any_spelling_of_the_family_is_set_aside(
    opener, word, case, space, draft, answer
):
    text = f"{opener}{draft}</{case(word)}{space}>\nAnswer: {answer}"
    kept, reasoning, aside = set_aside_reasoning(text)
    assert kept.strip() == f"Answer: {answer}" and reasoning == draft.strip(), (kept, aside)
    r = parse(text, tools=W)
    assert (r.kind, r.answer) == ("final", answer) and r.reasoning == draft.strip(), r
    assert read_reply(text, W).answer == answer


ESCAPABLE = st.text(alphabet="ab &<>\"'", min_size=1, max_size=12).map(str.strip)


@PROPERTY
@given(ESCAPABLE.filter(lambda v: any(c in v for c in "&<>\"'")))
def test_property_an_escaped_value_is_decoded_once_where_its_row_escapes_and_refused_elsewhere(
    value,
):
    escaped = html.escape(value)  # &amp; &lt; &gt; &quot; &#x27;
    schema = {"search": {"query": {"type": "string"}}}
    for tools in (schema, W):
        r = parse(f"<search><query>{escaped}</query></search>", tools=tools)
        assert (r.kind, r.tool, r.input) == ("action", "search", {"query": value}), r
    assert [r.name for r in FORMATS if r.entities] == ["XML element"]
    for text in (
        f"<tool_call>\n<function=search>\n<parameter=query>\n{escaped}\n</parameter>\n"
        "</function>\n</tool_call>",
        f"<tool_call>search<arg_key>query</arg_key><arg_value>{escaped}</arg_value></tool_call>",
        '<|tool_call>call:search{query:<|"|>' + escaped + '<|"|>}<tool_call|>',
        f"Action: search[{escaped}]",
    ):
        reason = one_line_reason(parse(text, tools=W))
        assert "HTML entity" in reason and "nothing was run" in reason, reason


#: Where a JSON object of arguments stands: call markup, call syntax, a JSON call.
ARGUMENTS_IN = [
    '<tool_call>{{"name": "search", "arguments": {args}}}</tool_call>',
    "Action: search({args})",
    "[TOOL_CALLS]search{args}",
    'Action: {{"action": "search", "action_input": {args}}}',
    "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{args}<|tool_call_end|>",
]


@PROPERTY
@given(
    st.integers(0xD800, 0xDFFF),
    st.text(alphabet="abc ", max_size=8),
    st.text(alphabet="abc ", max_size=8),
    st.sampled_from(["query", "city_name", "zz_key"]),
    st.sampled_from(ARGUMENTS_IN),
)
def test_property_a_lone_surrogate_escape_is_refused_naming_its_argument(
    code, before, after, key, shape
):
    value = f"{before}\\u{code:04x}{after}"  # a JSON escape, decoded to a lone surrogate
    r = parse(shape.format(args=f'{{"{key}": "{value}"}}'), tools=W)
    assert f"{key}: holds the lone surrogate" in one_line_reason(r), r.reason
    json.dumps(r.__dict__, ensure_ascii=False).encode("utf-8")  # nothing left to break
    errors = check_arguments(TOOLS["search"], f'{{"query": "{value}"}}')[1]
    assert errors and errors[0].startswith("query: holds the lone surrogate")


def test_no_vendors_name_is_written_in_the_reading_code_outside_the_table():
    tree = ast.parse(pathlib.Path(formats.__file__).read_text(encoding="utf-8"))
    table = next(
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "FORMATS"
    )
    vendors = {row.name for row in FORMATS} - {"XML element", "XML invoke"}  # no vendor's
    written = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if not table.lineno <= node.lineno <= table.end_lineno
    ]
    assert [(v, s) for s in written for v in vendors if v in s] == []
