"""The argument check, one fault *kind* at a time (issue 17), on the native path and the text path.

Kind 2: a value with a trailing newline passed an id pattern (``$`` matches before a final
newline). The rule, for every tool: strip surrounding whitespace before validation and
before the tool runs; refuse a control character left inside, naming the field.
Kind 3: a free-text argument with nothing in it to work on. Kind 6: messages that say what
happened and show the expected arguments, on one line.
"""

import json
import re

import jsonschema
import pytest

import react_lab.schema as schema_module
from react_lab.billing import SCHEDULE_PAYMENT
from react_lab.lab.agent.guards import Guards
from react_lab.lab.agent.native import execute_call
from react_lab.lab.agent.parser import parse
from react_lab.lab.backends.grammar import decodable
from react_lab.schema import NEEDS, check_arguments, example_args, validate_call
from react_lab.tools import Tool, call_tool, default_tools

TOOLS = {
    **default_tools(),
    "schedule_payment": Tool(
        "schedule_payment",
        lambda invoice_id, amount: {},
        "test double",
        SCHEDULE_PAYMENT,
        side_effect=True,
    ),
}
LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")


def _spies(received: list) -> dict:
    """Every tool, with a function that records what it receives.

    Instead of querying the database.
    """

    def spy(name):
        return lambda *args, **kwargs: received.append((name, args, kwargs)) or {"ok": True}

    return {
        name: Tool(name, spy(name), t.description, t.parameters, t.side_effect)
        for name, t in TOOLS.items()
    }


def _one_line(errors):
    assert errors and all(e and not LINE_BREAKS.search(e) and len(e) <= 600 for e in errors), errors
    return " | ".join(errors)


# ---- kind 2: surrounding whitespace, in every pattern-guarded argument of every tool ----------

PATTERNED = [
    (name, field, spec)
    for name, tool in TOOLS.items()
    for field, spec in tool.parameters["properties"].items()
    if "pattern" in spec and spec["pattern"] not in NEEDS
]


def _good(name):
    return {
        k: spec.get("examples", [None])[0]
        for k, spec in TOOLS[name].parameters["properties"].items()
    }


def test_every_id_and_date_argument_is_covered():
    fields = {(n, f) for n, f, _ in PATTERNED}
    assert {
        ("list_invoices", "customer_id"),
        ("list_invoices", "since"),
        ("get_charge", "charge_id"),
        ("find_invoice", "invoice_id"),
        ("get_payments", "invoice_id"),
        ("schedule_payment", "invoice_id"),
    } <= fields


def test_the_pitfall_is_real():
    # JSON Schema's pattern is re.search: "$" matches before a final newline
    assert re.search(
        TOOLS["find_invoice"].parameters["properties"]["invoice_id"]["pattern"], "INV-2041\n"
    )
    assert jsonschema.Draft202012Validator(TOOLS["find_invoice"].parameters).is_valid(
        {"invoice_id": "INV-2041\n"}
    )


@pytest.mark.parametrize("name,field,spec", PATTERNED, ids=[f"{n}.{f}" for n, f, _ in PATTERNED])
@pytest.mark.parametrize("pad", ["{}\n", "{}\r\n", "{} ", "\t{}", "\n{}\n", "{}\u2028", " {}\x85"])
def test_surrounding_whitespace_is_stripped_before_the_check_and_the_tool(name, field, spec, pad):
    good = _good(name)
    value = pad.format(good[field])
    args = {**good, field: value}
    # native path: valid, decoded to the stripped value, and the tool receives that
    assert check_arguments(TOOLS[name], json.dumps(args)) == (good, [])
    received = []
    obs = execute_call(
        _spies(received),
        {"function": {"name": name, "arguments": json.dumps(args)}},
        approved=True,  # schedule_payment: approved, as a loop's gate would
    )
    assert obs.error is None and received == [(name, (), good)]
    # text path: the JSON input and the positional input reach the tool stripped too
    received.clear()
    tools = _spies(received)
    parsed = parse(f"Action: {name}\nAction Input: {json.dumps(args)}", tools=list(tools))
    assert parsed.input == args
    assert call_tool(tools, name, parsed.args, approved=True).error is None
    yes = Guards.off(approve=lambda name, args: True)  # schedule_payment is approved
    assert yes.start().run_tool(tools, name, parsed.args).error is None
    positional = [args[k] for k in good]
    assert call_tool(tools, name, positional, approved=True).error is None
    assert all(call == (name, (), good) for call in received[:2]) and received[2:] == [
        (name, tuple(good.values()), {})
    ]


@pytest.mark.parametrize("name,field,spec", PATTERNED, ids=[f"{n}.{f}" for n, f, _ in PATTERNED])
@pytest.mark.parametrize("inside", ["\n", "\r", "\t", "\x00", "\x1b", "\u2028", "\x85"])
def test_a_control_character_inside_is_refused_naming_the_field(name, field, spec, inside):
    good = _good(name)
    value = good[field][:3] + inside + good[field][3:]
    args = {**good, field: value}
    decoded, errors = check_arguments(TOOLS[name], json.dumps(args))
    assert any(e.startswith(f"{field}:") and "control character" in e for e in errors), errors
    _one_line(errors)
    received = []
    tools = _spies(received)
    obs = execute_call(tools, {"function": {"name": name, "arguments": json.dumps(args)}})
    assert obs.error and field in obs.error
    assert call_tool(tools, name, args).error and call_tool(tools, name, list(args.values())).error
    assert received == []  # the tool never ran


def test_the_rule_holds_for_every_string_argument_not_only_ids():
    assert check_arguments(TOOLS["search"], '{"query": "  refund policy\\n"}') == (
        {"query": "refund policy"},
        [],
    )
    assert check_arguments(TOOLS["calc"], '{"expression": "\\t1 + 1 "}') == (
        {"expression": "1 + 1"},
        [],
    )
    _, errors = check_arguments(TOOLS["search"], '{"query": "refund\\npolicy"}')
    assert errors[0].startswith("query:") and "control character" in errors[0]


def test_the_rule_holds_for_any_tool_an_enum_too():
    # the report's own shape (can1357/oh-my-pi#4461): an enum value "init\n"
    todo = Tool(
        "todo",
        lambda op: op,
        "test double",
        {
            "type": "object",
            "required": ["op"],
            "additionalProperties": False,
            "properties": {"op": {"type": "string", "enum": ["init", "add"]}},
        },
    )
    assert check_arguments(todo, '{"op": "init\\n"}') == ({"op": "init"}, [])
    assert call_tool({"todo": todo}, "todo", {"op": "init\n"}).value == "init"
    assert call_tool({"todo": todo}, "todo", ["\tadd "]).value == "add"


def test_the_real_tools_answer_for_the_stripped_id():
    tools = default_tools()
    padded = call_tool(tools, "find_invoice", {"invoice_id": "INV-2041\n"})
    assert (
        padded.error is None
        and padded.value == call_tool(tools, "find_invoice", ["INV-2041"]).value
    )


def test_the_rule_is_stated_in_the_argument_check_module():
    doc = schema_module.__doc__
    assert "argument rule" in doc and "surrounding whitespace" in doc and "control character" in doc


# ---- kind 3: free-text arguments need something to work on ----------------------------------

FREE_TEXT = [
    (name, field)
    for name, tool in TOOLS.items()
    for field, spec in tool.parameters["properties"].items()
    if spec.get("type") == "string"
    and "format" not in spec  # not an id, not a date
    and ("pattern" not in spec or spec["pattern"] in NEEDS)
]


def test_every_free_text_argument_requires_a_word_or_a_number():
    assert set(FREE_TEXT) == {("search", "query"), ("calc", "expression")}
    for name, field in FREE_TEXT:
        assert TOOLS[name].parameters["properties"][field]["pattern"] in NEEDS


@pytest.mark.parametrize("pattern", sorted(NEEDS))
@pytest.mark.parametrize(
    "value", ["???", "refund policy", "  a", "\u9000\u6b3e", "", "!!7!!", "_", "a\nb"]
)
def test_a_needs_pattern_means_the_same_matched_anywhere_or_whole(pattern, value):
    # JSON Schema matches a pattern anywhere; grammar engines (llama.cpp, providers) the whole value
    assert bool(re.search(pattern, value)) == bool(re.fullmatch(pattern, value))


def test_the_grammar_leaves_the_needs_patterns_to_the_check():
    for name, field in FREE_TEXT:
        assert "pattern" not in decodable(TOOLS[name].parameters)["properties"][field]


@pytest.mark.parametrize("name,field", FREE_TEXT)
@pytest.mark.parametrize(
    "value", ["???", "   ", "", "...", "\u2014", "()", "*", "\u3002", "_", "!?!?"]
)
def test_a_free_text_argument_without_content_is_refused_naming_the_field(name, field, value):
    args, errors = check_arguments(TOOLS[name], json.dumps({field: value}))
    text = _one_line(errors)
    assert errors[0].startswith(f"{field}:") and ("nothing to" in text), errors
    assert len([e for e in errors if e.startswith(f"{field}:")]) == 1  # one message, not three


@pytest.mark.parametrize("query", ["\u9000\u6b3e", "\u00e9", "INV-2041", "60 days", "refund?"])
def test_a_query_with_a_word_in_any_script_passes(query):
    assert check_arguments(TOOLS["search"], json.dumps({"query": query}))[1] == []


def test_the_text_path_refuses_the_same_queries_at_the_tool():
    tools = default_tools()
    for query in ("???", "  ", "\u3002"):
        obs = call_tool(tools, "search", [query])
        assert (
            obs.value is None
            and obs.error.startswith("query")
            and "nothing to search for" in obs.error
        )
    assert call_tool(tools, "calc", ["+"]).error  # calc already refused: cannot parse '+'


# ---- kind 6: messages the model can act on -------------------------------------------------------

LIST = TOOLS["list_invoices"]
JULY = json.dumps({"customer_id": "cus_8812", "since": "2026-07-01"})


@pytest.mark.parametrize("cut", range(1, len(JULY)))
def test_every_cut_off_point_is_reported_as_cut_off_with_the_expected_object(cut):
    args, errors = check_arguments(LIST, JULY[:cut])
    text = _one_line(errors)
    assert args is None and "cut off" in text and "JSON" in text and example_args(LIST) in text
    assert "Expecting" not in text


@pytest.mark.parametrize(
    "arguments,words",
    [
        ('{}""', ["extra text after the JSON object"]),
        ('{"query": "x"}}', ["extra text after the JSON object"]),
        ('{"query": "x"} {"query": "y"}', ["extra text after the JSON object"]),
        ('{"query": "x"}<|im_end|>', ["extra text after the JSON object"]),
        (
            "<function=search>\n<parameter=query>\nrefunds\n</parameter>\n</function>",
            ["XML-like markup", "JSON object"],
        ),
        ("<parameter=query>refunds</parameter>", ["XML-like markup"]),
        ('<tool_call>{"query": "refunds"}</tool_call>', ["XML-like markup"]),
        ("<arg_key>query</arg_key><arg_value>refunds</arg_value>", ["XML-like markup"]),
        ('```json\n{"query": "refunds"}\n```', ["code fence", "JSON object alone"]),
        ("{'query': 'refunds'}", ["double quotes"]),
        ('{query: "refunds"}', ["double quotes"]),
        ("", ["empty"]),
        ("   ", ["empty"]),
        (json.dumps(json.dumps({"query": "refunds"})), ["encoded twice"]),
        ('["refunds"]', ["must be a JSON object", 'not an array (["refunds"])']),
        ("null", ["must be a JSON object", "not null"]),
        ("[" * 100_000, ["nested too deeply"]),
    ],
)
def test_an_undecodable_arguments_string_gets_a_message_naming_what_happened(arguments, words):
    args, errors = check_arguments(TOOLS["search"], arguments)
    text = _one_line(errors)
    assert args is None and all(w in text for w in words), text
    assert example_args(TOOLS["search"]) in text  # the expected shape, from the schema


@pytest.mark.parametrize("wrapper", ["properties", "parameters", "arguments", "args", "input"])
def test_arguments_wrapped_one_level_too_deep_are_named_with_the_flat_form(wrapper):
    args, errors = check_arguments(LIST, json.dumps({wrapper: json.loads(JULY)}))
    text = _one_line(errors)
    assert f"{wrapper}: not a declared argument" in text and "top level" in text and JULY in text
    assert "customer_id: required argument is missing" in text


def test_a_schema_shaped_reply_names_the_wrapper():
    args, errors = check_arguments(
        TOOLS["search"], '{"type": "object", "properties": {"query": "Paris"}}'
    )
    text = _one_line(errors)
    assert "properties: not a declared argument" in text and '{"query": "Paris"}' in text


@pytest.mark.parametrize("amount", ['"130"', '"130.50"', '" 130 "', '"1e3"'])
def test_a_number_sent_as_a_string_is_named_with_the_fix(amount):
    args, errors = check_arguments(
        TOOLS["schedule_payment"], f'{{"invoice_id": "INV-2291", "amount": {amount}}}'
    )
    text = _one_line(errors)
    assert (
        errors[0].startswith("amount:")
        and "is a string, not a number" in text
        and "without quotes" in text
    )


def test_a_word_sent_for_a_number_keeps_the_type_message():
    _, errors = check_arguments(
        TOOLS["schedule_payment"], '{"invoice_id": "INV-2291", "amount": "all"}'
    )
    assert errors[0].startswith("amount:") and "not of type 'number'" in errors[0]


@pytest.mark.parametrize(
    "leak",
    [
        "</arg_value><arg_key>since</arg_key>\n<arg_value>2026-07-01",
        "</parameter>\n<parameter=since>2026-07-01",
        "<|im_end|>",
        "</tool_call>",
    ],
)
def test_markup_leaked_into_a_value_is_named_once_for_that_field(leak):
    args = json.dumps({"customer_id": "cus_4417" + leak})
    _, errors = check_arguments(LIST, args)
    text = _one_line(errors)
    about = [e for e in errors if e.startswith("customer_id:")]
    assert len(about) == 1 and "call markup" in about[0]
    assert "since: required argument is missing" in text


def test_the_model_reads_one_line_with_a_valid_example_call():
    received = []
    obs = execute_call(
        _spies(received),
        {"function": {"name": "list_invoices", "arguments": '{"customer_id": "cus_8812"'}},
    )
    assert received == [] and not LINE_BREAKS.search(obs.text)
    assert (
        "cut off" in obs.error and f"a valid call: list_invoices({example_args(LIST)})" in obs.error
    )


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_the_example_shown_in_messages_is_itself_valid(name):
    example = example_args(TOOLS[name])
    assert check_arguments(TOOLS[name], example) == (json.loads(example), [])
    assert validate_call(TOOLS[name], json.loads(example)) == []


@pytest.mark.parametrize(
    "raw",
    [
        '{"invoice_id": "INV-2291", "amount": NaN}',
        '{"invoice_id": "INV-2291", "amount": Infinity}',
        '{"invoice_id": "INV-2291", "amount": -Infinity}',
        '{"invoice_id": "INV-2291", "amount": 1e400}',
    ],
)
def test_numbers_json_does_not_have_are_refused_not_passed_on(raw):
    """Python's json reads NaN/Infinity and turns 1e400 into inf.

    None of them is a JSON number (RFC 8259).
    """
    args, errors = check_arguments(TOOLS["schedule_payment"], raw)
    assert args is None and len(errors) == 1 and "not valid JSON" in errors[0]
    assert "amount" in errors[0]  # the message shows the expected arguments


def test_a_large_but_finite_number_still_decodes():
    args, errors = check_arguments(
        TOOLS["schedule_payment"], '{"invoice_id": "INV-2291", "amount": 1e300}'
    )
    assert errors == [] and args["amount"] == 1e300  # the tool itself then refuses the sum


# ---- a key given twice: one of its values would be dropped without a word --------------------

TWICE = '{"invoice_id": "INV-2041", "invoice_id": "INV-9999"}'


@pytest.mark.parametrize(
    "name, arguments, key",
    [
        ("find_invoice", TWICE, "invoice_id"),
        ("schedule_payment", '{"invoice_id": "INV-2291", "amount": 10, "amount": 48200}', "amount"),
        ("find_invoice", '{"invoice_id": {"b": 1, "b": 2}}', "b"),  # nested too
    ],
)
def test_a_key_given_twice_in_native_arguments_is_refused_naming_it(name, arguments, key):
    args, errors = check_arguments(TOOLS[name], arguments)
    assert args is None and len(errors) == 1
    assert f"'{key}'" in errors[0] and "twice" in errors[0], errors[0]
    assert execute_call(TOOLS, {"function": {"name": name, "arguments": arguments}}).error


@pytest.mark.parametrize(
    "text",
    [
        f"Action: find_invoice[{TWICE}]",
        f'Action: {{"action": "find_invoice", "action_input": {TWICE}}}',
        f'{{"name": "find_invoice", "arguments": {TWICE}}}',
        f'<tool_call>{{"name": "find_invoice", "arguments": {TWICE}}}</tool_call>',
        'find_invoice(invoice_id="INV-2041", invoice_id="INV-9999")',
        "Action: find_invoice({'invoice_id': 'INV-2041', 'invoice_id': 'INV-9999'})",
        # the tool's name given twice: which tool runs must not be a guess either
        'Action: {"action": "find_invoice", "action": "get_charge", "action_input": '
        '{"charge_id": "ch_1KZq8f"}}',
    ],
)
def test_a_key_given_twice_on_the_text_path_runs_no_tool_on_one_of_its_values(text):
    r = parse(text, tools=list(TOOLS))
    if r.kind == "action":  # read as text, not as one of the two values: the tool refuses it
        assert call_tool(TOOLS, r.tool, r.args).error, r
    else:
        assert r.kind == "error" and r.reason
    if text.startswith('Action: {"action"'):  # the reason says what is wrong
        assert "twice" in r.reason, r.reason
