"""Call markup that lost an opening or closing tag: taken when what is left names a declared tool
and its arguments unambiguously, refused naming the format and what is missing when not.

The kind came with three shared cases (GLM, Qwen3-Coder, Harmony); each row of
``tests/helpers/markup_members.py`` is another member, with the report it comes from. The text
parser and the leak reader (the native loop's) read each the same way: the same call, or no
call. No argument is ever dropped: a value ends where the next tag begins (parameters do not
nest), and text that no tag accounts for is named in a refusal.
"""

import json

import pytest
from helpers.markup_members import REFUSED, TAKEN, W

from react_lab._parsing.leaks import find_leaks
from react_lab.lab.agent.parser import parse


@pytest.mark.parametrize("member", TAKEN)
def test_a_member_whose_tags_left_name_the_call_is_taken_with_every_argument(member):
    text, tool, args = TAKEN[member]
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", tool, args), r
    # the native loop's leak reader reads the same call, every argument in the JSON it passes on
    leak = find_leaks(text, W)[0]
    assert leak.problem is None and leak.call["function"]["name"] == tool
    assert json.loads(leak.call["function"]["arguments"]) == args


@pytest.mark.parametrize("member", REFUSED)
def test_a_member_that_is_ambiguous_is_refused_naming_the_format_and_what_is_missing(member):
    text, tools, words = REFUSED[member]
    r = parse(text, tools=tools)
    assert r.kind == "error" and "\n" not in r.reason, r
    assert all(w in r.reason for w in words), r.reason
    assert "no action and no answer found" not in r.reason  # never the generic words
    # the leak reader never passes it on as a call that can run
    for leak in find_leaks(text, tools):
        assert leak.problem is not None or (
            tools is not None and leak.call["function"]["name"] not in tools
        )


def test_a_glued_name_is_split_only_where_a_declared_parameter_follows():
    text = "<tool_call>grep_toolpattern</arg_key><arg_value>TODO</arg_value></tool_call>"
    # with parameters known (the native loop's schemas), only one split leaves a declared parameter
    (leak,) = find_leaks(text, {"grep": ["query"], "grep_tool": ["pattern"]})
    assert leak.problem is None and leak.call["function"]["name"] == "grep_tool"
    assert json.loads(leak.call["function"]["arguments"]) == {"pattern": "TODO"}
    (leak,) = find_leaks(text, {"grep": ["query"], "grep_tool": ["query"]})
    assert leak.problem is not None and "is not a tool" in leak.problem


def test_parallel_calls_are_not_merged_when_the_first_loses_its_closing_tag():
    text = (
        "<tool_call>\n<function=search>\n<parameter=query>\nrefunds\n</parameter>\n"
        "<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>\n</function>\n</tool_call>"
    )
    leaks = find_leaks(text, W)
    assert [
        (x.call["function"]["name"], json.loads(x.call["function"]["arguments"])) for x in leaks
    ] == [("search", {"query": "refunds"}), ("get_weather", {"city": "Berlin"})]
    assert (parse(text, tools=W).tool, parse(text, tools=W).input) == (
        "search",
        {"query": "refunds"},
    )


@pytest.mark.parametrize("member", [m for m in TAKEN if "left out" in m])
def test_no_prefix_of_a_member_is_taken_as_a_shorter_call(member):
    # A tag left out is tolerated only where the next tag ends what it would have closed: cut
    # the text anywhere, and what is read is the whole call, or a refusal, never fewer arguments.
    text, tool, args = TAKEN[member]
    for cut in range(1, len(text)):
        r = parse(text[:cut], tools=W)
        assert r.kind != "action" or r.input == args, (cut, text[:cut], r.input)
