"""Call markup that lost an opening or closing tag: the kind's members, taken and refused.

The kind came with three shared cases (GLM, Qwen3-Coder, Harmony); each row below is another
member, with the report it comes from. ``tests/_parsing/test_markup_kinds.py`` reads each with
the text parser and the leak reader; ``tests/test_native_answers.py`` replays each through the
native loop.
"""

#: The tools the members are read with.
W = [
    "get_weather",
    "search",
    "bash",
    "Glob",
    "remember",
    "tool_12",
    "send_command_to_shell",
    "browser_action",
]
#: DeepSeek's special tokens (full-width bars, ``▁`` between the words).
DS = {
    "calls": "<\uff5ctool\u2581calls\u2581begin\uff5c>",
    "sep": "<\uff5ctool\u2581sep\uff5c>",
    "end": "<\uff5ctool\u2581call\u2581end\uff5c>",
    "calls_end": "<\uff5ctool\u2581calls\u2581end\uff5c>",
}

#: Members that are read: (text, tool, arguments). Each comment names where the shape was seen.
TAKEN = {
    # GLM (<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>)
    "GLM, <arg_value> left out (vllm#49248)": (
        "<tool_call>search<arg_key>query</arg_key>"
        "how many vacation days left</arg_value></tool_call>",
        "search",
        {"query": "how many vacation days left"},
    ),
    "GLM, </arg_value> left out before </tool_call> (ollama PR#14656)": (
        "<tool_call>search<arg_key>query</arg_key><arg_value>refund policy</tool_call>",
        "search",
        {"query": "refund policy"},
    ),
    "GLM, </arg_value> left out before the next key": (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Berlin<arg_key>days</arg_key>"
        "<arg_value>3</arg_value></tool_call>",
        "get_weather",
        {"city": "Berlin", "days": 3},
    ),
    "GLM, </arg_key> left out": (
        "<tool_call>search\n<arg_key>query<arg_value>refunds</arg_value>\n</tool_call>",
        "search",
        {"query": "refunds"},
    ),
    "GLM, the second <arg_key> left out": (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Berlin</arg_value>days</arg_key>"
        "<arg_value>3</arg_value></tool_call>",
        "get_weather",
        {"city": "Berlin", "days": 3},
    ),
    "GLM, name run into its first key, split at a declared tool (vllm PR#47190)": (
        "<tool_call>send_command_to_shellcommand</arg_key>"
        "<arg_value>echo test</arg_value></tool_call>",
        "send_command_to_shell",
        {"command": "echo test"},
    ),
    "GLM, name and first key apart, <arg_key> left out (vllm PR#47190)": (
        "<tool_call>browser_action task</arg_key><arg_value>open the page</arg_value></tool_call>",
        "browser_action",
        {"task": "open the page"},
    ),
    "GLM, a no-argument call with a stray </arg_value> (fw-ai python-sdk#119)": (
        "<tool_call>tool_12</arg_value></tool_call>",
        "tool_12",
        {},
    ),
    # Qwen3-Coder (<tool_call><function=NAME><parameter=k>v</parameter></function></tool_call>)
    "Qwen3-Coder, a middle </parameter> left out (ollama PR#17914)": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nBerlin\n<parameter=days>\n3\n</parameter>\n"
        "</function>\n</tool_call>",
        "get_weather",
        {"city": "Berlin", "days": 3},
    ),
    "Qwen3-Coder, </function> left out, </tool_call> written": (
        "<tool_call>\n<function=search>\n<parameter=query>\nrefunds\n</parameter>\n</tool_call>",
        "search",
        {"query": "refunds"},
    ),
    "Qwen3-Coder, both closers of the last parameter and function left out": (
        "<tool_call>\n<function=search>\n<parameter=query>\nrefunds\n</tool_call>",
        "search",
        {"query": "refunds"},
    ),
    "Qwen3-Coder, </tool_call> left out, </function> written": (
        "<tool_call>\n<function=search>\n<parameter=query>\nrefunds\n</parameter>\n</function>",
        "search",
        {"query": "refunds"},
    ),
    "Qwen3-Coder, <tool_call> left out, orphan </tool_call> (ollama#16686)": (
        "I'll use the Glob tool.\n\n"
        "<function=Glob>\n<parameter=pattern>\n*.md\n</parameter>\n</function>\n</tool_call>",
        "Glob",
        {"pattern": "*.md"},
    ),
    "Qwen3-Coder, </parameter/> (sglang PR#27337)": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\n\u4e0a\u6d77\n</parameter/>\n</function>\n</tool_call>",
        "get_weather",
        {"city": "\u4e0a\u6d77"},
    ),
    "Qwen3-Coder, </parameter1> (sglang PR#27337)": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter1>\n</function>\n</tool_call>",
        "get_weather",
        {"city": "Paris"},
    ),
    "Qwen3-Coder, </parameter_function> fused (sglang PR#27337)": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter_function>\n</tool_call>",
        "get_weather",
        {"city": "Paris"},
    ),
    # Claude-style <invoke>: a parameter closed by a tag named after it (claude-code#83088, #44826)
    "invoke, a parameter closed by </content>": (
        '<function_calls>\n<invoke name="remember">\n'
        '<parameter name="content">a long note</content>\n'
        '<parameter name="reason">{"tags": "a,b"}</parameter>\n</invoke>\n</function_calls>',
        "remember",
        {"content": "a long note", "reason": {"tags": "a,b"}},
    ),
    # Hermes / Qwen JSON in <tool_call>
    "Hermes, </tool_call> left out": (
        '<tool_call>\n{"name": "search", "arguments": {"query": "refunds"}}',
        "search",
        {"query": "refunds"},
    ),
    "Hermes, <tool_call> left out": (
        '{"name": "search", "arguments": {"query": "refunds"}}\n</tool_call>',
        "search",
        {"query": "refunds"},
    ),
    # Gemma 4 (<|tool_call>call:NAME{...}<tool_call|>)
    "Gemma 4, <tool_call|> left out": (
        '<|tool_call>call:get_weather{city:<|"|>Berlin<|"|>}',
        "get_weather",
        {"city": "Berlin"},
    ),
    # Harmony with its special tokens stripped, the recipient kept
    "Harmony, markers stripped, recipient kept": (
        "analysisWe need the weather."
        'assistantcommentary to=functions.get_weather json{"city": "Berlin"}',
        "get_weather",
        {"city": "Berlin"},
    ),
    # Kimi K2 and DeepSeek section tokens
    "Kimi K2, the section's end token cut": (
        "<|tool_calls_section_begin|> <|tool_call_begin|> functions.bash:0 "
        '<|tool_call_argument_begin|> {"command": "ls"} <|tool_call_end|> '
        "<|tool_calls_section_end|",
        "bash",
        {"command": "ls"},
    ),
    "Kimi K2, <|tool_call_begin|> left out": (
        '<|tool_calls_section_begin|>functions.bash:0<|tool_call_argument_begin|>{"command": "ls"}'
        "<|tool_call_end|><|tool_calls_section_end|>",
        "bash",
        {"command": "ls"},
    ),
    "Kimi K2, <|tool_call_end|> left out": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>"
        '{"command": "ls"}<|tool_calls_section_end|>',
        "bash",
        {"command": "ls"},
    ),
    "DeepSeek, the call's begin token left out": (
        f'{DS["calls"]}function{DS["sep"]}search\n```json\n{{"query": "refunds"}}\n```'
        f"{DS['end']}{DS['calls_end']}",
        "search",
        {"query": "refunds"},
    ),
    # Llama 4's <|python_start|> ... <|python_end|>
    "Llama 4, <|python_end|> left out": (
        '<|python_start|>{"name": "search", "parameters": {"query": "refunds"}}',
        "search",
        {"query": "refunds"},
    ),
    "Llama 4, <|python_start|> left out": (
        '{"name": "search", "parameters": {"query": "refunds"}}<|python_end|>',
        "search",
        {"query": "refunds"},
    ),
}

#: Members that are refused: (text, tools, words the refusal holds: the format and what is missing).
REFUSED = {
    "GLM, name run into its first key, no tools to split it": (
        "<tool_call>send_command_to_shellcommand</arg_key>"
        "<arg_value>echo test</arg_value></tool_call>",
        None,
        [
            "GLM",
            "<arg_key> missing",
            "'send_command_to_shellcommand' is not a tool",
            "Action: tool_name[",
        ],
    ),
    "GLM, name run into its first key, two declared tools fit": (
        "<tool_call>grep_toolpattern</arg_key><arg_value>TODO</arg_value></tool_call>",
        ["grep", "grep_tool"],
        ["GLM", "<arg_key> missing", "grep or grep_tool"],
    ),
    "GLM, name run into its first key, no declared tool fits": (
        "<tool_call>send_command_to_shellcommand</arg_key>"
        "<arg_value>echo test</arg_value></tool_call>",
        ["search"],
        ["GLM", "'send_command_to_shellcommand' is not a tool"],
    ),
    "GLM, a value that runs to the end of the text": (
        "<tool_call>search<arg_key>query</arg_key><arg_value>refund pol",
        W,
        ["GLM", "no closing tag", "'query'"],
    ),
    "GLM, text outside its arguments": (
        "<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>and more</tool_call>",
        W,
        ["GLM", "text outside its arguments", "and more"],
    ),
    "GLM, </tool_call> left out (the call may have more arguments)": (
        "<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>",
        W,
        ["GLM", "has no closing </tool_call>"],
    ),
    "Qwen3-Coder, a value that runs to the end of the text": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nBer",
        W,
        ["Qwen3-Coder", "no closing tag", "'city'"],
    ),
    "Qwen3-Coder, a value outside any parameter (was read as no arguments)": (
        "<tool_call>\n<function=get_weather>\nBerlin\n</function>\n</tool_call>",
        W,
        ["Qwen3-Coder", "text outside its parameters", "Berlin"],
    ),
    "Qwen3-Coder, a value holding a whole parameter pair (ninfer#138)": (
        "<tool_call>\n<function=bash>\n<parameter=command>\npython3 - <<'PY'\nimport re\n"
        "pattern = r'<parameter=edits>\\n(.*?)\\n</parameter>'\nprint(pattern)\nPY\n"
        "</parameter>\n</function>\n</tool_call>",
        W,
        ["Qwen3-Coder", "text outside its parameters"],
    ),
    "Hermes, a frame that names no tool": (
        "<tool_call>\n</tool_call>",
        W,
        ["Hermes", "names no tool"],
    ),
    "Harmony, markers and recipient stripped (strands harness-sdk#1949)": (
        "User asks for the weather. Let's list files."
        '{"cmd": ["bash", "lc", "ls -R /tmp/workspace"]}',
        None,
        ["arguments object", "names no tool"],
    ),
    "Kimi K2, a section with no call in it": (
        "Let me check. <|tool_calls_section_begin|>",
        W,
        ["Kimi K2", "ends before its first call"],
    ),
}
