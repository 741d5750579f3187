"""Property: whatever a model writes, built from call markup, special tokens, reasoning tags and
text, no loop's answer ever holds one of those fragments.

The fragments are the pieces of every format the leak reader knows (react_lab/_parsing/formats.py,
react_lab/_parsing/tokens.py: frames, their closing tags, their special tokens, in both bar
spellings) and the reasoning tags; the text is labels, words, calls and JSON pieces. Each
generated reply is the model's every reply in one run of each loop in :data:`LOOPS` (a
best-effort request included), and the run's answer, and every step's, must hold no
fragment.

:data:`LOOPS` maps a name to a function from a reply's text to the answers of one run. The learner's
reference loops join it when they exist (the core-path issue that follows issue 33): write
``answers_of(run)`` for a loop with the signature of :func:`react_lab.lab.agent.loop.run` (or of
:func:`react_lab.lab.agent.native.run_native`) and add it there.
"""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from react_lab.lab.agent.loop import run
from react_lab.lab.agent.native import run_native
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.tools import default_tools

EXAMPLES = int(os.environ.get("REACT_LAB_FUZZ_EXAMPLES", "1000")) // 4
PROPERTY = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TOOLS = default_tools()
QUESTION = "Was cus_8812 charged twice for INV-2041 in July?"
FW, SP = "\uff5c", "\u2581"  # DeepSeek's full-width bar and word marker

#: Pieces no answer may hold: every frame the leak reader knows, its special tokens, reasoning tags.
FRAGMENTS = [
    # Harmony (gpt-oss)
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|end|>",
    "<|call|>",
    "<|return|>",
    "<|constrain|>",
    "to=functions.",
    # DeepSeek (both bar spellings) and Kimi K2
    f"<{FW}tool{SP}calls{SP}begin{FW}>",
    f"<{FW}tool{SP}call{SP}begin{FW}>",
    f"<{FW}tool{SP}sep{FW}>",
    f"<{FW}tool{SP}call{SP}end{FW}>",
    f"<{FW}tool{SP}calls{SP}end{FW}>",
    "<|tool_calls_begin|>",
    "<|tool_sep|>",
    "<|tool_calls_section_begin|>",
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
    "<|tool_calls_section_end|>",
    # Mistral, Gemma 4, FunctionGemma
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|tool_call>",
    "<tool_call|>",
    '<|"|>',
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    # wrappers: Hermes/Qwen/GLM, Granite, Nemotron, Jamba, Command R, Apertus, LM Studio,
    # Llama 3 and 4, LFM2, Olmo 3 / Claude-style, Seed-OSS, MiniMax, LongCat, DeepSeek DSML,
    # Gemma 3
    "<tool_call>",
    "</tool_call>",
    "<|tool_call|>",
    "<TOOLCALL>",
    "</TOOLCALL>",
    "<tool_calls>",
    "</tool_calls>",
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|tools_prefix|>",
    "<|tools_suffix|>",
    "[TOOL_REQUEST]",
    "[END_TOOL_REQUEST]",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|python_start|>",
    "<|python_end|>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<function_calls>",
    "</function_calls>",
    "<seed:tool_call>",
    "</seed:tool_call>",
    "<minimax:tool_call>",
    "</minimax:tool_call>",
    "<longcat_tool_call>",
    f"<{FW}DSML{FW}function_calls>",
    "```tool_code",
    # elements: Qwen3-Coder, invoke (Claude-style, MiniMax, DSML, Step-3), GLM
    "<function=search>",
    "<function=get_payments>",
    "</function>",
    "<parameter=query>",
    "<parameter=invoice_id>",
    "</parameter>",
    '<invoke name="search">',
    "</invoke>",
    '<parameter name="query">',
    f'<{FW}DSML{FW}invoke name="search">',
    '<steptml:invoke name="search">',
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
    # turn tokens
    "<|im_start|>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|endoftext|>",
    "</s>",
    "<end_of_turn>",
    "<start_of_turn>",
    # reasoning tags
    "<think>",
    "</think>",
    "<thinking>",
    "</thinking>",
    "<seed:think>",
    "</seed:think>",
    "[THINK]",
    "[/THINK]",
    "\u25c1think\u25b7",
    "\u25c1/think\u25b7",
]
#: What the fragments are mixed with: labels, names, calls, JSON pieces, words, line breaks.
TEXT = [
    "Thought: ",
    "Action: ",
    "Action Input: ",
    "Answer: ",
    "Final Answer: ",
    "Observation: ",
    "\n",
    "\n\n",
    " ",
    "search",
    "get_payments",
    "create_file",
    "INV-2041",
    "refund policy",
    "functions.",
    "call:",
    "analysis",
    "final",
    "commentary",
    "assistant",
    "json",
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    '{"query": "refunds"}',
    '{"invoice_id": "INV-2041"}',
    '{"name": "search", "arguments": {"query": "x"}}',
    "search[refund policy]",
    'get_payments(invoice_id="INV-2041")',
    "No, INV-2041 was paid once.",
    "\u5317\u4eac",
    "42",
    "I need to check.",
    "finish(",
    ")",
    "=",
    "<",
    ">",
    "|",
    "/",
]

piece = st.sampled_from(FRAGMENTS + TEXT)
reply = st.lists(st.one_of(piece, piece, st.sampled_from(FRAGMENTS)), min_size=1, max_size=24).map(
    "".join
)


def answers_of(loop, kind: str):
    """A function from a reply's text to the answers of one run of ``loop``, every reply that text.

    ``kind``: ``"text"`` for a loop over completions (:func:`react_lab.lab.agent.loop.run`'s
    signature), ``"native"`` for one over chat replies
    (:func:`react_lab.lab.agent.native.run_native`'s).
    """

    def answers(text: str) -> list[str]:
        if kind == "text":
            steps = loop(QUESTION, ScriptedModel([text]), TOOLS, max_steps=2)
        else:
            steps = loop(
                QUESTION, ScriptedChatModel([{"thought": "", "answer": text}]), TOOLS, max_steps=2
            )
        return [s.answer for s in steps if s.answer is not None]

    return answers


#: Each loop whose answers must hold no fragment. The learner's reference loops go here.
LOOPS = {"text loop": answers_of(run, "text"), "native loop": answers_of(run_native, "native")}


def held_fragments(answer: str) -> list[str]:
    return [f for f in FRAGMENTS if f in answer]


@pytest.mark.parametrize("loop", LOOPS)
@PROPERTY
@given(text=reply)
def test_no_answer_of_any_loop_holds_markup_a_special_token_or_a_reasoning_tag(loop, text):
    for answer in LOOPS[loop](text):
        assert not held_fragments(answer), (text, answer)


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    "text,answer",
    [
        ("Answer: No, INV-2041 was paid once.", "No, INV-2041 was paid once."),
        (
            "<think>It was paid once.</think>\nAnswer: No, INV-2041 was paid once.",
            "No, INV-2041 was paid once.",
        ),
    ],
)
def test_the_property_is_not_met_by_never_answering(loop, text, answer):
    # the loops do answer: a reply with reasoning and a plain answer gives the plain answer
    assert LOOPS[loop](text)[-1] == answer


def test_the_check_sees_a_fragment_where_there_is_one():
    assert held_fragments("42<|im_end|>") == ["<|im_end|>"]
    assert held_fragments("No, INV-2041 was paid once.") == []
