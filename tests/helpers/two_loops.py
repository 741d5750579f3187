"""The two loops the guard tests run every scenario over, and the scenarios' shared pieces.

An adapter (:class:`TextLoop`, :class:`NativeLoop`) scripts the model in its protocol's shape and
runs :func:`react_lab.lab.agent.loop.ask` or :func:`react_lab.lab.agent.native.ask_native`; a run
that names no ``guards`` gets the adapter's (the lesson's :class:`react_lab.lab.agent.guards.Guards`
in ``tests/test_guards.py``, the lab's :class:`react_lab.lab.guards.LabGuards` in
``tests/lab/test_lab_guards.py``). :func:`loops` gives the ``loop`` fixture (``tests/conftest.py``)
its adapters.
"""

import time

from react_lab.lab.agent.loop import ask, run
from react_lab.lab.agent.native import ask_native, run_native
from react_lab.lab.backends.chat import ScriptedChatModel
from react_lab.lab.backends.scripted import ScriptedModel
from react_lab.schema import object_schema
from react_lab.tools import Tool


class TextLoop:
    """The text protocol: a step is ``Thought ... Action: tool[a, b]``; the model reads a prompt."""

    name = "text"

    def __init__(self, guards):
        self.guards = guards  # what a run gets when the test names no guards

    def call(self, tool, **arguments):
        return f" Call {tool}.\nAction: {tool}[{', '.join(str(v) for v in arguments.values())}]"

    def answer(self, text):
        return f" Done.\nAnswer: {text}"

    def best_effort(self, text):
        """What the model writes after the loop's ``Answer:`` label, asked for a best effort."""
        return f" {text}"

    def model(self, script):
        return ScriptedModel(script)

    def ask(self, question, model, tools, **kwargs):
        return ask(question, model, tools, **{"guards": self.guards(), **kwargs})

    def run(self, question, model, tools, **kwargs):
        return list(run(question, model, tools, **{"guards": self.guards(), **kwargs}))

    def calls(self, model):
        return model.calls

    def sent(self, model, i=-1):
        """The text of the ``i``-th request to the model."""
        return model.prompts[i]

    def args(self, **arguments):
        """The arguments an approver is shown: the text loop's strings, in order."""
        return [str(v) for v in arguments.values()]

    def cli(self, path):
        return ["--model", f"scripted:{path}"]


class NativeLoop(TextLoop):
    """Native tool calling: a reply is ``{"thought", "tool_calls": [...]}`` or an answer."""

    name = "native"

    def call(self, tool, **arguments):
        return {"thought": f"Call {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}

    def answer(self, text):
        return {"thought": "Done.", "answer": text}

    best_effort = answer

    def model(self, script):
        return ScriptedChatModel(script)

    def ask(self, question, model, tools, **kwargs):
        return ask_native(question, model, tools, **{"guards": self.guards(), **kwargs})

    def run(self, question, model, tools, **kwargs):
        return list(run_native(question, model, tools, **{"guards": self.guards(), **kwargs}))

    def calls(self, model):
        return len(model.requests)

    def sent(self, model, i=-1):
        return "\n".join(str(m.get("content") or "") for m in model.requests[i][0])

    def args(self, **arguments):
        """The arguments an approver is shown: the decoded JSON object."""
        return arguments

    def cli(self, path):
        return ["--protocol", "native", "--model", f"scripted:{path}"]


def loops(guards):
    """The ``loop`` fixture's adapters: each scenario once per loop, ``guards()`` by default."""
    return [TextLoop(guards), NativeLoop(guards)]


def calls_run(result, tool):
    """How many steps really ran ``tool`` (a refused call has a guard and no data)."""
    return sum(
        1
        for s in result.steps
        if s.action
        and s.action["tool"] == tool
        and s.guard not in ("repeat", "near_repeat", "retry_cap", "approval")
    )


def spent(steps):
    return sum(s.prompt_tokens + s.completion_tokens for s in steps)


def walk(loop):
    """Three lookups of INV-2291, then the answer."""
    return [
        loop.call("find_invoice", invoice_id="INV-2291"),
        loop.call("get_payments", invoice_id="INV-2291"),
        loop.call("search", query="supplier payments"),
        loop.answer("INV-2291 is approved and has no payments, so it is unpaid."),
    ]


def sleepy_tools(tools):
    """``tools`` and ``nap``, which sleeps for the seconds it is given."""

    def nap(seconds: str) -> dict:
        time.sleep(float(seconds))
        return {"slept": float(seconds)}

    schema = object_schema(seconds={"type": "string", "description": "seconds to sleep"})
    return {**tools, "nap": Tool("nap", nap, "Sleep, then answer.", schema)}


def bad_charges(loop, n=6):
    return [loop.call("get_charge", charge_id=f"ch_bad{i}") for i in range(n)]


def injected(loop):
    """A search whose help article says to pay; the model obeys; then it answers."""
    return [
        loop.call("search", query="late payment reminders"),
        loop.call("schedule_payment", invoice_id="INV-2291", amount=48200),
        loop.answer("Reminders go out 7, 14 and 30 days after the due date."),
    ]
