"""Other models' native call markup read by the parser: every format, by kind.

Harmony, DeepSeek, Kimi, Mistral, Gemma, Qwen, GLM, Llama, ...
(:mod:`react_lab._parsing.formats`), their special tokens in every spelling, tokenizer markers
where spaces belong, and labels inside markup (not labels; markup is never an answer).
"""

import pytest
from helpers.parsing_checks import BERLIN, DS, KIMI_K2, TOOLS, W, one_line_reason

from react_lab.lab.agent.parser import parse

# ---- other models' native call markup: every format, by kind ---------------------------------

#: A frame that names the tool outside its JSON arguments.
NAME_OUTSIDE = {
    "Harmony, recipient in the channel header": (
        "<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Berlin"}<|call|>',
        "harmony",
    ),
    "Harmony, recipient in the role header": (
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json"
        '<|message|>{"city": "Berlin"}<|call|>',
        "harmony",
    ),
    "DeepSeek V3.1": (
        f'{DS["calls"]}{DS["begin"]}get_weather{DS["sep"]}{{"city": "Berlin"}}{DS["end"]}'
        f"{DS['calls_end']}",
        "deepseek",
    ),
    "DeepSeek R1, fenced JSON": (
        f"{DS['calls']}{DS['begin']}function{DS['sep']}get_weather\n```json\n"
        f'{{"city": "Berlin"}}\n```{DS["end"]}{DS["calls_end"]}',
        "deepseek",
    ),
    "Kimi K2": (KIMI_K2, "kimi_k2"),
    "Llama 3.1 function tag": ('<function=get_weather>{"city": "Berlin"}</function>', "llama_3_1"),
    "Functionary v3.2": ('>>>get_weather\n{"city": "Berlin"}', "functionary"),
    "Mistral with [ARGS]": ('[TOOL_CALLS]get_weather[ARGS]{"city": "Berlin"}', "mistral"),
    "Mistral with [CALL_ID]": (
        '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Berlin"}',
        "mistral",
    ),
}
#: A name glued to its arguments object.
GLUED = {
    "Mistral v11": ('[TOOL_CALLS]get_weather{"city": "Berlin"}', "mistral"),
    "Gemma 4, delimited strings": (
        '<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>}<tool_call|>',
        "gemma",
    ),
    "FunctionGemma": (
        "<start_function_call>call:get_weather{city:<escape>Berlin<escape>}<end_function_call>",
        "functiongemma",
    ),
    "on an Action line": ('Thought: the weather\nAction: get_weather{"city": "Berlin"}', "glued"),
    "a line alone": ('get_weather{"city": "Berlin"}', "glued"),
    "a line alone, bare keys": ('get_weather{city: "Berlin"}', "glued"),
}
#: Arguments written as elements, one per parameter.
ELEMENTS = {
    "Qwen3-Coder": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>\n</function>\n"
        "</tool_call>",
        "qwen3_coder",
    ),
    "Seed-OSS": (
        "<seed:tool_call>\n<function=get_weather>\n<parameter=city>Berlin</parameter>\n</function>\n"
        "</seed:tool_call>",
        "seed_oss",
    ),
    "MiniMax M2": (
        '<minimax:tool_call>\n<invoke name="get_weather">\n'
        '<parameter name="city">Berlin</parameter>\n'
        "</invoke>\n</minimax:tool_call>",
        "minimax",
    ),
    "Claude-style function_calls": (
        '<function_calls>\n<invoke name="get_weather">\n<parameter name="city">'
        "Berlin</parameter>\n</invoke>\n</function_calls>",
        "xml_invoke",
    ),
    "DeepSeek V3.2 DSML": (
        '<\uff5cDSML\uff5cfunction_calls>\n<\uff5cDSML\uff5cinvoke name="get_weather">\n'
        '<\uff5cDSML\uff5cparameter name="city" string="true">Berlin</\uff5cDSML\uff5cparameter>\n'
        "</\uff5cDSML\uff5cinvoke>\n</\uff5cDSML\uff5cfunction_calls>",
        "deepseek_dsml",
    ),
    "Step-3": (
        "<\uff5ctool_calls_begin\uff5c><\uff5ctool_call_begin\uff5c>function<\uff5ctool_sep\uff5c>"
        '<steptml:invoke name="get_weather">'
        '<steptml:parameter name="city">Berlin</steptml:parameter>'
        "</steptml:invoke><\uff5ctool_call_end\uff5c><\uff5ctool_calls_end\uff5c>",
        "step_3",
    ),
    "GLM-4.5": (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Berlin</arg_value>\n</tool_call>",
        "glm",
    ),
    "GLM-4.7, one line": (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Berlin</arg_value></tool_call>",
        "glm",
    ),
}
#: JSON inside a frame.
JSON_FRAMES = {
    "Hermes / Qwen": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Berlin"}}\n</tool_call>',
        "hermes",
    ),
    "Qwen3 thinking first": (
        '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", '
        '"arguments": {"city": "Berlin"}}\n</tool_call>',
        "hermes",
    ),
    "Mistral before v11": (
        '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Berlin"}}]',
        "mistral",
    ),
    "Granite": (
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Berlin"}}]',
        "granite",
    ),
    "Nemotron": (
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Berlin"}}]</TOOLCALL>',
        "nemotron",
    ),
    "Phi-4": ('functools[{"name": "get_weather", "arguments": {"city": "Berlin"}}]', "phi_4"),
    "Command R": (
        '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": '
        '{"city": "Berlin"}}\n]<|END_ACTION|>',
        "command_r",
    ),
    "Apertus, the name as the key": (
        '<|tools_prefix|>[{"get_weather": {"city": "Berlin"}}]<|tools_suffix|>',
        "apertus",
    ),
    "LM Studio": (
        '[TOOL_REQUEST]{"name": "get_weather", "arguments": {"city": "Berlin"}}[END_TOOL_REQUEST]',
        "lm_studio",
    ),
    "Llama 3 python_tag JSON": (
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Berlin"}}<|eom_id|>',
        "llama_3",
    ),
}
#: Python-style calls.
PYTHONIC = {
    "LFM2": ('<|tool_call_start|>[get_weather(city="Berlin")]<|tool_call_end|>', "lfm2"),
    "Gemma 3 tool_code": ('```tool_code\nget_weather(city="Berlin")\n```', "gemma_3"),
    "Gemma 3 print(default_api...)": (
        '```tool_code\nprint(default_api.get_weather(city="Berlin"))\n```',
        "gemma_3",
    ),
    "Olmo 3, one call a line": (
        '<function_calls>get_weather(city="Berlin")\nsearch(query="x")</function_calls>',
        "olmo_3",
    ),
    "a Python-style list alone": ('[get_weather(city="Berlin"), search(query="x")]', "call"),
    "a call alone on its line": ('get_weather(city="Berlin")', "call"),
}
ALL_FORMATS = {**NAME_OUTSIDE, **GLUED, **ELEMENTS, **JSON_FRAMES, **PYTHONIC}


@pytest.mark.parametrize("shape", ALL_FORMATS)
def test_every_native_format_is_read_as_its_call(shape):
    text, dialect = ALL_FORMATS[shape]
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input, r.dialect) == ("action", "get_weather", BERLIN, dialect), r
    assert r.kept and r.kept in text.replace("\r\n", "\n")


def test_the_reasoning_a_format_carries_is_the_thought_not_its_tokens():
    assert (
        parse(NAME_OUTSIDE["Harmony, recipient in the channel header"][0], tools=W).thought
        == "Need it."
    )
    assert (
        parse(JSON_FRAMES["Qwen3 thinking first"][0], tools=W).thought
        == "The user wants the weather."
    )
    assert (
        parse("Let me check. " + NAME_OUTSIDE["DeepSeek V3.1"][0], tools=W).thought
        == "Let me check."
    )


@pytest.mark.parametrize(
    "bar,space", [("\uff5c", "\u2581"), ("|", "_"), ("|", "\u2581"), ("\uff5c", "_")]
)
def test_special_tokens_are_read_in_every_spelling(bar, space):
    # full-width bars and U+2581 as DeepSeek's tokenizer has them, ASCII as servers re-spell them
    tok = lambda words: f"<{bar}{space.join(words.split())}{bar}>"  # noqa: E731
    text = (
        f"{tok('tool calls begin')}{tok('tool call begin')}get_weather"
        f'{tok("tool sep")}{{"city": "Berlin"}}'
        f"{tok('tool call end')}{tok('tool calls end')}"
    )
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", BERLIN)


def test_every_call_of_a_frame_holding_several_is_read_in_order():
    from react_lab._parsing.formats import find_calls

    two = (
        f"{DS['calls']}{DS['begin']}function{DS['sep']}get_weather\n"
        f'```json\n{{"city": "Berlin"}}\n```{DS["end"]}'
        f"\n{DS['begin']}function{DS['sep']}search\n"
        f'```json\n{{"query": "x"}}\n```{DS["end"]}{DS["calls_end"]}'
    )
    for text in (
        two,
        '[TOOL_CALLS]get_weather{"city": "Berlin"}[TOOL_CALLS]search{"query": "x"}',
        PYTHONIC["Olmo 3, one call a line"][0],
    ):
        assert [(c.name, c.arguments) for c in find_calls(text)] == [
            ("get_weather", BERLIN),
            ("search", {"query": "x"}),
        ]
        assert parse(text, tools=W).tool == "get_weather"  # the first call is the action


@pytest.mark.parametrize(
    "text,inp",
    [
        (
            '<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>,days:3,metric:true,opts:{units:<|"|>C<|"|>,'
            'tags:[<|"|>a<|"|>,<|"|>b<|"|>]},note:null}<tool_call|>',
            {
                "city": "Berlin",
                "days": 3,
                "metric": True,
                "opts": {"units": "C", "tags": ["a", "b"]},
                "note": None,
            },
        ),
        (
            '<|tool_call>call:get_weather{q:<|"|>say "hi", then {stop}<|"|>}<tool_call|>',
            {"q": 'say "hi", then {stop}'},
        ),
        (
            "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n"
            '<parameter=opts>\n{"a": [1]}\n'
            "</parameter>\n<parameter=city>\n12 Main St\n</parameter>\n</function>\n</tool_call>",
            {"days": 3, "opts": {"a": [1]}, "city": "12 Main St"},
        ),
        (
            '<\uff5cDSML\uff5cinvoke name="get_weather">'
            '<\uff5cDSML\uff5cparameter name="days" string="false">3'
            "</\uff5cDSML\uff5cparameter>"
            '<\uff5cDSML\uff5cparameter name="zip" string="true">01234</\uff5cDSML\uff5cparameter>'
            "</\uff5cDSML\uff5cinvoke>",
            {"days": 3, "zip": "01234"},
        ),
        (
            "<tool_call>get_weather\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
            {"days": 3},
        ),
        ("<tool_call>get_weather</tool_call>", {}),
        (
            "<|channel|>commentary to=functions.get_weather <|constrain|>json"
            '<|message|>{"city": "Berlin", "days": 3}',
            {"city": "Berlin", "days": 3},
        ),
    ],
)
def test_values_keep_their_types(text, inp):
    # element values are JSON when they are JSON, else text; DSML's string="true" keeps text
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", inp)


@pytest.mark.parametrize(
    "text,inp",
    [
        (
            "<function=search>\n<parameter=query>\nrefunds\n</parameter>\n</function>",
            {"query": "refunds"},
        ),
        ('<invoke name="search"><parameter name="query">x</parameter></invoke>', {"query": "x"}),
    ],
)
def test_markup_that_once_got_a_message_is_now_read_as_the_call(text, inp):
    # these two were refused as "markup ... write 'Action: search[...]'"; they are read now
    r = parse(text, tools=TOOLS)
    assert (r.kind, r.tool, r.input) == ("action", "search", inp)


# ---- tokenizer markers where spaces belong ------------------------------------------------


@pytest.mark.parametrize(
    "text,tool,inp",
    [
        # SentencePiece
        (
            '[TOOL_CALLS]\u2581[{"name":\u2581"get_weather",\u2581"arguments":\u2581{"city":\u2581"New\u2581York"}}]',
            "get_weather",
            {"city": "New York"},
        ),
        # and a byte token
        ("\u2581Action:\u2581search[refund\u2581policy]<0x0A>", "search", "refund policy"),
        # byte-level BPE
        ("Action:\u0120search\u010aAction\u0120Input:\u0120caf\u00c3\u00a9", "search", "caf\u00e9"),
    ],
)
def test_text_whose_tokens_were_joined_without_decoding_is_decoded(text, tool, inp):
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input) == ("action", tool, inp)
    assert "\u2581" not in str(r.input) and "\u0120" not in str(r.input)


def test_markers_inside_special_tokens_and_a_stray_marker_are_left_alone():
    r = parse(NAME_OUTSIDE["DeepSeek V3.1"][0] + " ", tools=W)  # the tokens hold U+2581 themselves
    assert (r.kind, r.tool, r.input) == ("action", "get_weather", BERLIN)
    assert parse("Answer: the \u2581 marker is U+2581").answer == "the \u2581 marker is U+2581"


# ---- labels inside markup are not labels; markup is never an answer -----------------------


@pytest.mark.parametrize(
    "text",
    [
        "Answer: I will check.\n" + JSON_FRAMES["Hermes / Qwen"][0],
        "Final Answer: " + GLUED["Gemma 4, delimited strings"][0],
        "Action: " + JSON_FRAMES["Hermes / Qwen"][0],
        '<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>,\nanswer:<|"|>sunny<|"|>}<tool_call|>',
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nBerlin\n</parameter>\n"
        "<parameter=note>\nAnswer: x\n"
        "</parameter>\n</function>\n</tool_call>",
    ],
)
def test_markup_wins_over_a_label_before_it_on_its_line_or_inside_it(text):
    r = parse(text, tools=W)
    assert (r.kind, r.tool, r.input["city"]) == ("action", "get_weather", "Berlin")


def test_a_label_that_ends_before_the_markup_starts_still_wins():
    r = parse("Action: search[x]\n" + JSON_FRAMES["Hermes / Qwen"][0], tools=W)
    assert (r.kind, r.tool, r.input) == ("action", "search", "x")


def test_harmony_final_channel_is_the_answer_and_analysis_is_never_one():
    final = (
        "<|channel|>analysis<|message|>Easy.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>12 C.<|return|>"
    )
    assert (parse(final).kind, parse(final).answer, parse(final).thought) == (
        "final",
        "12 C.",
        "Easy.",
    )
    r = parse("<|channel|>analysis<|message|>Answer: 42<|end|>")
    assert r.kind == "error" and "Harmony" in one_line_reason(r) and "analysis" in r.reason


@pytest.mark.parametrize(
    "answer", ["42<|im_end|>", "42<|eot_id|>", "42</s>", "42 <|end|>\n", "42<end_of_turn>"]
)
def test_an_end_of_turn_token_is_not_part_of_the_answer(answer):
    assert parse(f"Answer: {answer}").answer == "42"
    assert "answer is empty" in one_line_reason(parse("Answer: <|im_end|>"))
