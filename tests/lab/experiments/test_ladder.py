"""The ladder's pieces: the text-protocol grammar, the configs and the runner, the working agent's
kinds. The dev exemplar pool is test_exemplars.py's, the tool designs test_tool_designs.py's."""

import dataclasses
import json
import re
from collections import Counter

import pytest

from react_lab.lab.backends import text_grammar as tg
from react_lab.lab.backends.base import Completion
from react_lab.lab.cli import main as cli_main
from react_lab.lab.experiments import configs, ladder
from react_lab.lab.experiments.exemplars import select
from react_lab.lab.experiments.tasks import load_tasks
from react_lab.lab.experiments.tool_designs import VARIANTS

TEST = load_tasks(split="test")
DEV = load_tasks(split="dev")


# --------------------------------------------------------------------------- the grammar


def test_id_patterns_become_gbnf():
    assert tg.regex_to_gbnf(r"^INV-[0-9]{4}$") == '"INV-" [0-9]{4}'
    assert tg.regex_to_gbnf(r"^ch_[A-Za-z0-9]+$") == '"ch_" [A-Za-z0-9]+'
    assert tg.regex_to_gbnf(r"^\d{4}-\d{2}$") == '[0-9]{4} "-" [0-9]{2}'
    with pytest.raises(ValueError, match="supported"):
        tg.regex_to_gbnf(r"^(a|b)$")


def test_schema_rules_follow_the_tool_schemas(tools):
    props = tools["list_invoices"].parameters["properties"]
    assert tg.schema_rule(props["customer_id"]) == '"cus_" [0-9]{4}'
    assert tg.schema_rule(props["since"]) == tg.ISO_DATE
    # a free-text argument (search's query) is one line without a closing bracket
    assert tg.schema_rule(tools["search"].parameters["properties"]["query"]) == r"[^\]\n]{1,120}"


def test_grounded_ids_come_only_from_the_context(tools):
    prop = tools["find_invoice"].parameters["properties"]["invoice_id"]
    assert tg.grounded_values(prop, "Was INV-2041 paid? INV-99 INV-2041 cus_8812") == ["INV-2041"]
    assert tg.schema_rule(prop, context="no ids here") is None
    assert tg.grounded_values(tools["search"].parameters["properties"]["query"], "x") is None


def test_protocol_grammar_names_every_tool_and_grounds_calls(tools):
    free = tg.protocol_grammar(tools.values())
    for name in tools:
        assert f'"{name}["' in free
    assert free.startswith("root ::= ") and '"Answer: " ans' in free
    grounded = tg.protocol_grammar(
        tools.values(), context="Question: When was cus_8812 last billed?"
    )
    assert '"cus_8812"' in grounded
    assert "find_invoice[" not in grounded and "get_charge[" not in grounded  # no such ids yet
    assert '" I " ("call "' in tg.protocol_grammar(tools.values(), thought="short")
    with pytest.raises(ValueError, match="thought mode"):
        tg.protocol_grammar(tools.values(), thought="json")


def test_grounding_context_skips_exemplars_thoughts_and_errors():
    prompt = (
        "Example:\nQuestion: old INV-1111\nObservation: INV-2222\n\n"
        "Question: Was INV-2041 paid?\nThought: maybe INV-3333\nAction: x\n"
        "Observation: Error: INV-4444 not found\nThought: y\n"
        'Observation: {"charge_ids": ["ch_1KZq8f"]}\nThought:'
    )
    context = tg.grounding_context(prompt)
    assert "INV-2041" in context and "ch_1KZq8f" in context
    assert not {"INV-1111", "INV-2222", "INV-3333", "INV-4444"} & set(
        re.findall(r"INV-\d+", context)
    )


def test_the_grammar_model_picks_the_answer_only_grammar_for_best_effort(tools):
    model = ladder.GrammarModel(None, tools, thought="free", grounded=True)
    assert model.grammar_for("...\nAnswer:") == tg.answer_only_grammar()
    assert ladder.GrammarModel(None, tools).grammar_for("Question: x\nThought:") is None
    waiting = "Question: q\nObservation: [...] to read on, call more[p1]]\nThought:"
    assert '"more["' in model.grammar_for(waiting)


# --------------------------------------------------------------------------- configs and runner


def test_the_named_rungs_exist_and_change_one_thing():
    for name in ("baseline", "grammar_action", "grammar_grounded", "pool_k1", "best", "tax_short"):
        assert name in ladder.CONFIGS
    best, gpool = ladder.get_config("best"), ladder.get_config("gpool_k1")
    assert (best.grammar, best.grounded, best.exemplars, best.k) == (
        gpool.grammar,
        gpool.grounded,
        "pool",
        3,
    )
    k1 = ladder.get_config("v_dollars")
    assert ladder.get_config("v_k3") == dataclasses.replace(
        k1, name="v_k3", about=ladder.get_config("v_k3").about, k=3
    )
    assert ladder.get_config("t_dollars").tools == "dollars"
    with pytest.raises(ValueError, match="unknown config"):
        ladder.get_config("nope")


def test_choose_tasks_gives_a_fixed_stratified_subset():
    tasks = ladder.choose_tasks("test", per_category=4)
    assert len(tasks) == 52 and all(t in TEST for t in tasks)
    assert set(Counter(t.category for t in tasks).values()) == {4}
    assert ladder.choose_tasks("test", per_category=4) == tasks


def test_no_test_task_is_an_exemplar_in_any_test_prompt():
    for name in ("baseline", "pool_k3", "best"):
        cfg = ladder.get_config(name)
        ladder.check_no_leak(cfg, TEST)
        for task in TEST[:20]:
            prompt = ladder.first_prompt(cfg, task)
            others = [t for t in TEST if t.id != task.id and t.question in prompt]
            assert others == []


class ScriptedBase:
    """A stand-in for LocalModel: answers every prompt with the oracle's next step."""

    name = "scripted"

    def __init__(self, task):
        self.task, self.calls = task, []

    def render(self, prompt):
        return prompt

    def generate(self, text, **options):
        self.calls.append(options)
        live = text[text.rfind("\nQuestion: ") :]
        done = live.count("\nObservation: ")
        if done < len(self.task.oracle):
            tool, args = self.task.oracle[done]
            reply = f" I call {tool}.\nAction: {tool}[{', '.join(args)}]"
        else:
            reply = f" I know it.\nAnswer: {self.task.gold}"
        return Completion(
            text=reply,
            finish_reason="stop",
            prompt_tokens=len(text) // 4,
            completion_tokens=10,
            seconds=0.01,
        )


def test_runner_logs_resumes_and_summarizes(tmp_path, monkeypatch):
    monkeypatch.setitem(configs._COMPILED, "x", None)
    monkeypatch.setattr(configs, "compiled", lambda grammar: grammar)  # no llama.cpp needed
    tasks = ladder.choose_tasks("test", per_category=1)[:3]
    cfg = ladder.get_config("best")
    base = ScriptedBase(tasks[0])
    records, complete = ladder.run_ladder(
        cfg,
        tasks[:1],
        split="test",
        trials=2,
        temperature=0.7,
        log_dir=tmp_path,
        model=base,
        progress=None,
    )
    assert complete and [r["trial"] for r in records] == [0, 1]
    assert all(r["correct"] for r in records)
    assert [c["seed"] for c in base.calls[:1]] == [0] and base.calls[-1]["seed"] == 1
    assert all("grammar" in c and c["temperature"] == 0.7 for c in base.calls)
    # all cached
    again, complete = ladder.run_ladder(
        cfg,
        tasks[:1],
        split="test",
        trials=2,
        temperature=0.7,
        log_dir=tmp_path,
        model=None,
        progress=None,
    )
    assert complete and again == records
    # the same name standing for other settings does not reuse the logged runs
    changed = cfg.with_(cfg.name, cfg.about, tools="oldest_first")
    before = len(base.calls)
    rerun, complete = ladder.run_ladder(
        changed,
        tasks[:1],
        split="test",
        trials=2,
        temperature=0.7,
        log_dir=tmp_path,
        model=base,
        progress=None,
    )
    assert complete and len(base.calls) > before and [r["trial"] for r in rerun] == [0, 1]
    s = ladder.summarize(records)
    assert (s["n"], s["trials"], s["successes"]) == (1, 2, 1)
    assert s["pass_hat_k"] == [1.0, 1.0] and s["pass_at_k"] == [1.0, 1.0]
    assert 0 < s["ci95"][0] < s["ci95"][1] == 1.0
    assert "pass^k 1.00 1.00" in ladder.format_summary("best", s)
    # the budget stops before a run starts; the next call resumes
    _, complete = ladder.run_ladder(
        cfg, tasks, split="test", budget=-1, log_dir=tmp_path / "b", model=base, progress=None
    )
    assert not complete


def test_summary_separates_reliability_from_capability():
    recs = [
        {
            "task_id": t,
            "trial": i,
            "correct": ok,
            "category": "c",
            "n_steps": 2,
            "prefix_tokens": 1,
            "exemplar_tokens": 0,
            "prompt_tokens": 10,
            "completion_tokens": 1,
            "seconds": 1.0,
            "answer": "x",
            "stopped_by": "answer",
        }
        for t, outcomes in {"a": [1, 1, 1, 1], "b": [1, 0, 1, 0], "c": [0, 0, 0, 0]}.items()
        for i, ok in enumerate(outcomes)
    ]
    s = ladder.summarize(recs)
    assert s["pass_at_k"][3] == pytest.approx(2 / 3) and s["pass_hat_k"][3] == pytest.approx(1 / 3)
    assert s["pass_hat_k"][0] == s["pass_at_k"][0] == pytest.approx(s["success_rate"] * 0 + 6 / 12)
    assert s["by_category"] == {"c": [2, 3]}
    recs[-1].update(answer=None, stopped_by="timeout")
    recs[-2].update(answer="[best effort] 3", stopped_by="repeat")
    recs[-3].update(answer="4", stopped_by="answer")
    assert ladder.failure_modes(recs) == {
        "wrong answer": ["b", "b", "c", "c"],
        "best effort, wrong (repeat)": ["c"],
        "no answer (timeout)": ["c"],
    }


def test_results_files_round_trip_with_their_fingerprint(tmp_path):
    from react_lab.lab.experiments import results

    cfg = ladder.get_config("pool_k1")
    tasks = ladder.choose_tasks("test", per_category=1)[:2]
    recs = [
        {
            "config": cfg.name,
            "task_id": t.id,
            "category": t.category,
            "trial": 0,
            "correct": i == 0,
            "answer": t.gold if i == 0 else "I don't know",
            "stopped_by": "answer",
            "n_steps": 2,
            "prefix_tokens": 700,
            "exemplar_tokens": 300,
            "prompt_tokens": 1500,
            "completion_tokens": 40,
            "seconds": 3.0,
        }
        for i, t in enumerate(tasks)
    ]
    settings = ladder.results_config(cfg, "test", tasks, 1, 0.0, 0, "first 1 per category, first 2")
    ladder.save(
        "ladder-test-pool_k1",
        recs,
        settings,
        command="react-lab eval --config pool_k1",
        directory=tmp_path,
    )
    (row,) = ladder.load_results(directory=tmp_path)
    assert (row["config"], row["split"], row["rate"].successes, row["rate"].n) == (
        "pool_k1",
        "test",
        1,
        2,
    )
    assert row["outcomes"] == {tasks[0].id: [True], tasks[1].id: [False]}
    assert row["prompt_tokens"] == 1500 and row["mean_steps"] == 2
    # an answer the scorer now judges differently makes the file stale
    path = tmp_path / "ladder-test-pool_k1.json"
    saved = json.loads(path.read_text())
    saved["data"]["records"][1]["answer"] = tasks[1].gold
    path.write_text(json.dumps(saved))
    with pytest.raises(results.StaleResults, match="scorer now judges 1"):
        ladder.load_results(directory=tmp_path)
    # a prompt change (another config's exemplars under this name) makes the file stale
    saved["data"]["records"][1]["answer"] = "I don't know"
    saved["config"]["config"] = "pool_k2"
    path.write_text(json.dumps(saved))
    with pytest.raises(results.StaleResults):
        ladder.load_results(directory=tmp_path)


def test_cli_lists_configs_and_refuses_unknown_ones(capsys):
    assert cli_main(["eval", "--list-configs"]) == 0
    out = capsys.readouterr().out
    assert "baseline" in out and "best" in out
    assert cli_main(["eval", "--config", "nope"]) == 2
    assert "unknown config" in capsys.readouterr().err
    assert cli_main(["eval", "--config", "best", "--trials", "2"]) == 2  # greedy repeats


@pytest.mark.model
def test_best_rung_runs_the_embedded_model_under_its_grammar():
    from react_lab.lab.backends.grammar import grammar_check

    tools = ladder.tools_for(ladder.get_config("best"))
    grammar = tg.protocol_grammar(tools.values(), context="Question: Was INV-2041 paid?")
    assert grammar_check(grammar, " I look it up.\nAction: find_invoice[INV-2041]").accepted
    assert not grammar_check(grammar, " I look it up.\nAction: find_invoice[INV-2042]").accepted
    task = next(t for t in DEV if t.category == "invoice_total")
    rec = ladder.run_one(ladder.get_config("best"), task)
    assert rec["n_steps"] >= 1 and rec["prompt_tokens"] > rec["prefix_tokens"] > 0
    first = rec["steps"][0]
    # grounded: the first call can only name an id the question wrote
    assert first["tool"] is None or first["tool"] in tools
    if first["tool"] == "find_invoice":
        assert first["args"][0] in task.question
    json.dumps(rec)


def test_every_variant_is_described_once():
    from react_lab.lab.experiments.tool_designs import ABOUT

    assert set(ABOUT) == set(VARIANTS)


def test_a_greedy_rung_gives_the_same_outcomes_in_every_shipped_file_that_ran_it():
    """Greedy decoding with a cache that never changes a completion: the whole-half run of a
    config must agree, task by task, with its run on the fixed subset."""
    from react_lab.lab.experiments import results

    runs: dict[str, list[dict]] = {}
    for name in results.saved():
        if name.startswith("ladder-"):
            res = results.load(name)
            if res.config["trials"] == 1 and res.config["split"] == "test":
                runs.setdefault(res.config["config"], []).append(
                    {r["task_id"]: r["correct"] for r in res.data["records"]}
                )
    pairs = 0
    for config, outcomes in runs.items():
        for a in outcomes:
            for b in outcomes:
                if a is not b:
                    shared = set(a) & set(b)
                    assert {t: a[t] for t in shared} == {t: b[t] for t in shared}, config
                    pairs += bool(shared)
    assert pairs >= 2  # at least baseline's and best's subset and whole-half files


# ------------------------------------------------------------------------ the working agent's kinds


def test_the_grammar_offers_no_call_already_made_and_reads_ids_as_typed(tools):
    from react_lab.lab.backends.grammar import grammar_check

    best = configs.tools_for(ladder.get_config("best"))
    model = configs.GrammarModel(None, best, thought="free", grounded=True, no_repeat=True)
    prompt = (
        "Example:\nQuestion: x INV-1111\nAction: get_payments[INV-1111]\n\n"
        "Question: is inv-2041 paid?\n"
        "Thought: a\nAction: get_payments[INV-2041]\n"
        'Observation: {"invoice_id": "INV-2041", "charge_ids": ["ch_1KZq8f"]}\nThought:'
    )
    grammar = model.grammar_for(prompt)
    assert not grammar_check(grammar, " x\nAction: get_payments[INV-2041]").accepted  # made already
    assert grammar_check(grammar, " x\nAction: find_invoice[INV-2041]").accepted  # lower case read
    assert grammar_check(grammar, " x\nAction: get_charge[ch_1KZq8f]").accepted
    plain = configs.GrammarModel(None, best, thought="free", grounded=True)
    assert grammar_check(plain.grammar_for(prompt), " x\nAction: get_payments[INV-2041]").accepted


def test_rungs_that_predate_a_field_keep_their_fingerprint_settings():
    old = {f: v for f, v in configs.LATER_FIELDS.items()}
    for cfg in configs.CONFIGS.values():
        s = configs.settings(cfg)
        assert all(k not in s or s[k] != v for k, v in old.items())
    assert "select" not in configs.settings(ladder.get_config("t_oldest_first"))
    assert configs.settings(ladder.get_config("best"))["select"] == "intent"


def test_intent_selection_picks_an_exemplar_of_the_asked_kind():
    from react_lab.lab.experiments.exemplars import get_pool, intent
    from react_lab.lab.experiments.tasks import Task

    pool = list(get_pool("oldest_first"))
    for question, wanted in [
        ("On what date did cus_9999 last get an invoice?", "date"),
        ("Is INV-9999 fully paid off?", "yesno"),
        ("which invoice did cus_9999 get last?", "id"),
    ]:
        task = Task("q", "q", question, "", "text")
        (by_intent,) = select(pool, task, by="intent")
        assert intent(question) == wanted
        assert next(e for e in pool if e.task_id == by_intent.source).intent == wanted
    with pytest.raises(ValueError, match="unknown selection"):
        select(pool, TEST[0], by="words")


def test_a_balanced_yes_no_question_sees_a_yes_and_a_no_and_other_questions_one_exemplar():
    from react_lab.lab.experiments.exemplars import get_pool
    from react_lab.lab.experiments.tasks import Task

    pool = list(get_pool("oldest_first"))
    task = Task("q", "q", "Is INV-9999 fully paid off?", "", "text")
    (nearest,) = select(pool, task, by="intent")
    other, last = select(pool, task, by="intent", balanced=True)
    assert last == nearest  # the nearest stays nearest the question
    assert {other.answer.split(".")[0], last.answer.split(".")[0]} == {"Yes", "No"}
    dated = Task("d", "d", "On what date did cus_9999 last get an invoice?", "", "text")
    assert select(pool, dated, by="intent", balanced=True) == select(pool, dated, by="intent")


def test_ask_takes_a_named_configuration(capsys):
    assert cli_main(["ask", "--list-configs"]) == 0
    assert "best" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli_main(["ask", "--config", "best", "--protocol", "native", "Was INV-2041 paid?"])
    with pytest.raises(SystemExit):
        cli_main(["ask"])  # a question is still required
    assert cli_main(["ask", "x", "--config", "nope"]) == 2
    assert "unknown config" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["best", "native_pool_k1"])
def test_ask_runs_a_configuration_in_its_own_protocol(name, monkeypatch):
    """`react-lab ask --config NAME` runs what the ladder measured: a native rung natively."""
    from react_lab.lab.backends import chat

    monkeypatch.setattr(configs, "compiled", lambda grammar: grammar)  # no llama.cpp needed
    monkeypatch.setattr(chat, "LocalChatModel", lambda base: ("chat on", base))
    seen = {}

    def run_task(task, runner, tools, **options):
        seen.update(options, runner=runner)
        return "result"

    monkeypatch.setattr(ladder, "run_task", run_task)
    cfg = ladder.get_config(name)
    base = object()
    assert (
        ladder.ask_config("Has supplier invoice INV-2291 been paid?", cfg, model=base) == "result"
    )
    assert seen["protocol"] == cfg.protocol
    if cfg.protocol == "native":
        assert seen["runner"] == ("chat on", base) and seen["loop_options"]["exemplars"]
    else:
        assert seen["runner"].base is base and seen["exemplars"]
        assert "guards" in seen["loop_options"]
