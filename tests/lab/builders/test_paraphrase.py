"""The phrasing test sets.

Rebuilt identically, gold from SQL, the oracle at 100%, never in a prompt.
"""

import json
import re
from functools import partial

import pytest

from react_lab import protocol
from react_lab.lab.builders import build_paraphrase as bp
from react_lab.lab.cli import main as cli_main
from react_lab.lab.experiments import configs, evals, ladder
from react_lab.lab.experiments.exemplars import HARVESTED_FROM, answer_intent, get_pool, intent
from react_lab.lab.experiments.tasks import TASK_FILES, load_tasks
from react_lab.lab.experiments.tool_designs import VARIANTS, get_tools
from react_lab.tools import ID_RE, open_db

PARA, SEEDS = load_tasks(split="paraphrase"), load_tasks(split="seeds")
TEMPLATES = {d["id"]: d for d in json.loads((bp.TASKS).read_text(encoding="utf-8"))}
RAW = json.loads(TASK_FILES["paraphrase"].read_text(encoding="utf-8"))


def _canonical(i: str) -> str:
    head, sep, tail = re.match(r"([A-Za-z]+)([_-])(.*)", i).groups()
    return (head.upper() if sep == "-" else head.lower()) + sep + tail


def test_rebuilding_writes_the_identical_files(tmp_path):
    bp.write(tmp_path / "p.json", tmp_path / "s.json")
    assert (tmp_path / "p.json").read_bytes() == TASK_FILES["paraphrase"].read_bytes()
    assert (tmp_path / "s.json").read_bytes() == TASK_FILES["seeds"].read_bytes()


def test_several_questions_per_category_about_test_entities_only():
    categories = {t["category"] for t in TEMPLATES.values()}
    per = {c: sum(t.category == c for t in PARA) for c in categories}
    assert min(per.values()) >= 4, per
    test_ids = {
        i for t in TEMPLATES.values() if t["split"] == "test" for i in ID_RE.findall(t["question"])
    }
    dev_ids = {
        i for t in TEMPLATES.values() if t["split"] == "dev" for i in ID_RE.findall(t["question"])
    }
    for d in RAW:
        assert TEMPLATES[d["rephrases"]]["split"] == "test", d["id"]
        asked = {_canonical(i) for i in ID_RE.findall(d["question"])}
        assert asked <= test_ids and not asked & dev_ids, d["id"]
        # not a template's words
        assert d["question"] not in {t["question"] for t in TEMPLATES.values()}
    questions = [t.question for t in PARA]
    assert len(set(questions)) == len(questions)
    # the seed articles' questions about test entities are in it, as the articles word them
    assert {
        "Was cus_8812 charged twice for INV-2041 in July?",
        "Has supplier invoice INV-2291 been paid?",
    } <= set(questions)
    assert any(re.search(r"\binv-\d{4}", q) for q in questions)  # an id typed in lower case


def test_every_gold_answer_is_what_its_sql_selects():
    conn = open_db()
    for d in RAW + json.loads(TASK_FILES["seeds"].read_text(encoding="utf-8")):
        query, _, regex = d["sql"].partition("  -- then the regex ")
        value = conn.execute(query, d["params"]).fetchone()[0]
        if regex:
            value = re.search(regex, value).group(1)
        if d["kind"] == "number":
            assert float(value) == float(d["gold"]), d["id"]
        else:
            assert str(value) == d["gold"], d["id"]


@pytest.mark.parametrize("split", ["paraphrase", "seeds"])
def test_the_oracle_scores_100_percent_and_dont_know_0(split, tmp_path, shipped_db_unchanged):
    tasks = load_tasks(split=split)
    run = evals.evaluate(
        tasks, evals.oracle_model, model_name="oracle", cache_dir=tmp_path, progress=False
    )
    assert run.metrics["success_rate"] == 1.0 and run.metrics["tool_error_rate"] == 0.0
    none = evals.evaluate(
        tasks,
        partial(evals.dont_know_model),
        model_name="dont_know",
        cache_dir=tmp_path,
        progress=False,
    )
    assert none.metrics["success_rate"] == 0.0


def _prompt_inputs() -> list[str]:
    """Everything a prompt of any configuration is built from, besides the live question:
    every pool of every tool variant (written and harvested), the default exemplars, every
    tool description and schema (the grammars are built from them)."""
    texts = [e.render() for e in protocol.EXEMPLARS]
    for variant in VARIANTS:
        texts += [e.exemplar.render() for e in get_pool(variant, "oracle")]
        texts += [json.dumps(t.openai_schema()) for t in get_tools(variant).values()]
    for variant in HARVESTED_FROM:
        texts += [e.exemplar.render() for e in get_pool(variant, "runs")]
    return texts


def test_no_paraphrase_question_or_id_value_pair_reaches_a_prompt_building_input():
    """The paraphrase set is held out. No exemplar of any pool, no default exemplar, no tool
    description or schema (the grammars are built from them) holds one of its questions; and
    under every configuration, the exemplars chosen for a paraphrase question show none of
    its invoice, charge or article ids, and never one of its ids beside its gold answer.

    (A written pool entry can list an invoice a test task asks about -- a latest-invoice
    exemplar lists a customer's invoices since January -- so the check is on the exemplars
    each question is given: :func:`react_lab.lab.experiments.exemplars.select` never gives an
    entry that shows an id the question names, however the question writes it.)
    """
    inputs = _prompt_inputs()
    for task in PARA:
        assert not any(task.question.casefold() in text.casefold() for text in inputs), task.id
    for cfg in configs.CONFIGS.values():
        for task in PARA:
            ids = {_canonical(i) for i in ID_RE.findall(task.question)}
            shown = "\n".join(e.render() for e in ladder.exemplars_for(cfg, task))
            assert not {i for i in ids if not i.startswith("cus_")} & set(ID_RE.findall(shown)), (
                cfg.name,
                task.id,
            )
            if task.kind != "yesno":
                assert not (ids & set(ID_RE.findall(shown)) and task.gold in shown), (
                    cfg.name,
                    task.id,
                )


def test_no_prompt_of_any_configuration_shows_a_paraphrase_task():
    for cfg in configs.CONFIGS.values():
        ladder.check_no_leak(cfg, PARA)  # exemplars from dev tasks only, none naming its ids
        for task in PARA[::7]:
            prompt = ladder.first_prompt(cfg, task)
            assert prompt.count(task.question) == 1, (cfg.name, task.id)  # only as the question


def test_the_intent_rules_read_every_template_question_as_its_answer_kind():
    """The exemplar selection's reading of a question, checked on the task set (never on the
    paraphrase set): what each template question asks for is the kind of its gold answer."""
    wrong = [
        t.id
        for t in load_tasks(split="all")
        if intent(t.question) != answer_intent(t) and answer_intent(t) != "label"
    ]
    assert wrong == []


def test_eval_takes_any_task_file_and_says_what_is_wrong_with_a_bad_one(tmp_path, capsys):
    mine = tmp_path / "mine.json"
    mine.write_text(
        json.dumps(
            [
                {
                    "id": "m1",
                    "category": "c",
                    "question": "What is 2 + 2?",
                    "gold": "4",
                    "kind": "number",
                }
            ]
        )
    )
    assert [t.id for t in load_tasks(mine, split="all")] == ["m1"]
    assert cli_main(["eval", "--config", "best", "--tasks", str(mine), "--budget", "-1"]) == 3
    assert "0 of 1 runs done" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps([{"id": "m1", "category": "c", "question": "q", "gold": "4", "kind": "colour"}])
    )
    assert cli_main(["eval", "--config", "best", "--tasks", str(bad)]) == 2
    assert "kind 'colour'" in capsys.readouterr().err
    bad.write_text(json.dumps([{"id": "m1", "question": "q"}]))
    with pytest.raises(ValueError, match="task 0 has no category, gold, kind"):
        load_tasks(bad, split="all")
    assert cli_main(["eval", "--config", "best", "--tasks", str(mine), "--split", "test"]) == 2
