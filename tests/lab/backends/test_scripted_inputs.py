"""A scripted model refuses a script it cannot replay, naming what to write instead."""

import pytest

from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel


@pytest.mark.parametrize("script", ["Answer: 42", [1], ["Answer: 42", None]])
def test_a_text_script_that_is_not_a_list_of_strings_is_refused(script):
    with pytest.raises(TypeError, match="string"):
        ScriptedModel(script)


@pytest.mark.parametrize("script", ["x", {"answer": "42"}])
def test_a_chat_script_that_is_one_reply_is_refused(script):
    # a list of anything is a script: a malformed reply is what some tests replay
    with pytest.raises(TypeError, match="repl"):
        ScriptedChatModel(script)
