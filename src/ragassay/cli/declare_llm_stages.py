"""ping, judge, check, generate, remap: their arguments. Declaring them imports nothing of the LLM
layer or the stages; the handlers (cli/llm_stages.py) are imported when one of these commands runs."""

from __future__ import annotations

from typing import Any

from .handlers import Handler
from .options import add_batch_options, add_format_option, add_llm_options
from .paths import folder, reads, text, writes
from .values import nonneg_int, percent, positive_float, positive_int, share


def ping(sub: Any) -> None:
    p = sub.add_parser(
        "ping",
        help="check the LLM endpoint: reachable, latency, structured outputs",
        description="Send one small structured request to the configured endpoint and report whether "
        "it is reachable, how long it took, whether the model answered as asked, and "
        "whether JSON-schema structured outputs work or a fallback (JSON mode, plain "
        "instructions) is in use. Exits 1 with the reason when it cannot be used.",
        epilog="Example: ragassay ping --base-url http://localhost:8000/v1 --model qwen2.5-7b-instruct",
    )
    add_llm_options(p, stage=False)
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.llm_stages", "run_ping"))


def judge(sub: Any) -> None:
    p = sub.add_parser(
        "judge",
        help="LLM relevance grades 0-3 for a run's top chunks, and answer coverage",
        description="Grade the top --depth chunks of every query in RUN for relevance (0 unrelated, "
        "1 on topic but no answer, 2 partial or buried answer, 3 dedicated and answers "
        "it), with the model's reasoning. Writes judgments JSONL (resumable), graded qrels "
        "for evaluate/agree with --qrels-out, and per-query coverage (FULL / PARTIAL / "
        "NONE from answer nuggets) with --coverage-out. A pair that cannot be judged is "
        "an error record, never grade 0.",
        epilog="Example: ragassay judge --queries datasets/example/queries.jsonl --chunks "
        "datasets/example/chunks.jsonl --run datasets/example/runs/bm25.txt --depth 5 "
        "-o judgments.jsonl --qrels-out judged.qrels --model gpt-4o-mini",
    )
    reads(
        p.add_argument(
            "--queries",
            required=True,
            metavar="FILE",
            help="queries ({id, text} lines, or questions.jsonl from generate: its answers inform coverage)",
        )
    )
    reads(p.add_argument("--chunks", required=True, metavar="FILE", help="the chunks the run retrieved (JSONL)"))
    reads(p.add_argument("--run", required=True, metavar="RUN", help="the run to judge (TREC or JSONL)"))
    p.add_argument("--depth", type=positive_int, default=10, help="judge the top K chunks of each query (default 10)")
    writes(
        p.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="FILE",
            help="judgments JSONL: one record per pair, written at the end; a killed or failed run resumes "
            "from FILE.journal and asks only what is missing",
        )
    )
    writes(
        p.add_argument(
            "--qrels-out",
            metavar="FILE",
            help="write graded TREC qrels of every pair the judgments file holds (runs judged into "
            "it earlier too), with --keep labels included",
        )
    )
    writes(p.add_argument("--coverage-out", metavar="FILE", help="write per-query coverage JSONL"))
    reads(p.add_argument("--keep", metavar="QRELS", help="labels made by people: kept as they are, never judged again"))
    p.add_argument(
        "--samples",
        type=positive_int,
        default=1,
        help="ask N times per pair (sample i sends seed --seed + i) and take the median grade (default 1)",
    )
    p.add_argument("--seed", type=nonneg_int, default=0, help="first seed of the samples (default 0)")
    p.add_argument(
        "--tie",
        choices=("lower", "higher", "round-half-even"),
        default="lower",
        help="the median of an even number of votes (samples or jurors) that differ: take the lower "
        "(default), the higher, or their mean rounded to even",
    )
    add_batch_options(p)
    p.add_argument(
        "--batch",
        type=positive_int,
        default=1,
        help="grade N chunks of a query per call, in a fixed shuffled "
        "order (default 1: one call per pair, no position effects)",
    )
    p.add_argument(
        "--max-chunk-chars",
        type=positive_int,
        default=6000,
        help="longer chunks are judged in windows of this "
        "many characters and take the best window's grade (default 6000)",
    )
    p.add_argument(
        "--long-chunks",
        choices=("windows", "cut"),
        default="windows",
        help="windows (default: one call per window) or cut (one call, the rest cut with a visible mark)",
    )
    p.add_argument(
        "--cache-friendly",
        action="store_true",
        help="pointwise prompts that open with worked examples, long enough (over 1,024 tokens) for the "
        "provider's prompt cache: cheaper where cached tokens cost a tenth (gpt-5 models), dearer "
        "where they cost half (gpt-4o-mini); a different prompt, so pairs judged without it are "
        "judged again",
    )
    reads(
        p.add_argument(
            "--prompt",
            default="auto",
            metavar="PROMPT",
            help="auto (default: short when the model's name says 14B parameters or fewer, e.g. "
            "llama3.1:8b; full otherwise), full (the rubric with steps of reasoning), short (a brief "
            "prompt for small local models) or a prompt FILE of your own: [system]/[user] sections, "
            "placeholders {{query}} and {{passage}} required, {{need}} and {{expected}} optional; "
            'answered as {"reasoning": optional, "grade": 0-3}; its version (NAME@hash of its '
            "text) is in every record",
        )
    )
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    p.set_defaults(handler=Handler("ragassay.cli.llm_stages", "run_judge"))


def check(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="label RAG answers correct / partial / hallucinated / abstained, and diagnose",
        description="Label each answer against its reference (correct, partial, hallucinated, "
        "abstained) and against its retrieved context (supported, unsupported, "
        "contradicted). Rules decide what they are sure of without a call; an LLM grades "
        "the rest. Prints rates with 95% bootstrap intervals; with --run and --qrels, "
        "whether wrong answers come from retrieval or generation; with --human, agreement "
        "with people and prediction-powered rates. Without an endpoint, only the rules run "
        "and the rest are error records that a rerun with an endpoint fills in.",
        epilog="Example: ragassay check datasets/example/answers.jsonl --chunks datasets/example/chunks.jsonl "
        "--run datasets/example/runs/bm25.txt --qrels datasets/example/qrels.txt -o checks.jsonl --model gpt-4o-mini",
    )
    reads(
        p.add_argument(
            "answers",
            metavar="ANSWERS",
            help="JSONL: id, question, reference (string or list), response, and contexts or context_ids",
        )
    )
    writes(
        p.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="FILE",
            help="checks JSONL: one record per answer, written at the end; a rerun asks only what is missing",
        )
    )
    reads(p.add_argument("--chunks", metavar="FILE", help="chunks JSONL, to resolve context_ids"))
    reads(p.add_argument("--run", metavar="RUN", help="the run behind the answers (with --qrels: diagnosis)"))
    reads(p.add_argument("--qrels", metavar="QRELS", help="gold chunks per question (with --run: diagnosis)"))
    reads(
        p.add_argument(
            "--queries",
            metavar="FILE",
            help="the queries of the run: answers whose ids meet none of "
            "the run's are matched to them by question text, counted",
        )
    )
    reads(
        p.add_argument(
            "--test-set",
            metavar="FILE",
            help="the question set the answers answer (generate's "
            "questions): answerable and premise taken by id, counted; "
            "an abstention on an unanswerable question is correct",
        )
    )
    p.add_argument(
        "-k",
        "--depth",
        type=positive_int,
        default=10,
        metavar="K",
        help="retrieval depth for the diagnosis's recall@k (default 10; --depth as in judge)",
    )
    p.add_argument(
        "--retrieval-threshold",
        type=share,
        default=0.5,
        help="recall@k at or above this is good retrieval (default 0.5)",
    )
    reads(p.add_argument("--human", metavar="FILE", help="people's labels for some answers (JSONL id, label)"))
    text(
        p.add_argument(
            "--by", action="append", metavar="FIELD", help="break rates down by an answer field (repeatable)"
        )
    )
    p.add_argument(
        "--samples",
        type=positive_int,
        default=1,
        help="ask N times, each a distinct request with its own seed, "
        "and take the majority (ties go to the more severe label; default 1)",
    )
    p.add_argument("--seed", type=nonneg_int, default=0, help="with --samples N, sample i sends seed + i (default 0)")
    p.add_argument(
        "--max-response-chars",
        type=positive_int,
        default=32000,
        metavar="N",
        help="responses are graded whole up to N characters; a longer one is an error record that "
        "says so, never graded from a cut (default 32000)",
    )
    p.add_argument(
        "--max-context-chars",
        type=positive_int,
        default=12000,
        metavar="N",
        help="budget for all passages of an answer; the rest is cut or dropped, marked (default 12000)",
    )
    reads(
        p.add_argument(
            "--prompt",
            default="auto",
            metavar="PROMPT",
            help="auto (default: short when the model's name says 14B parameters or fewer, e.g. "
            "qwen2.5-7b-instruct; full otherwise), full (the rubric that also judges grounding), "
            "short (a brief prompt for small local models) or a prompt FILE of your own: "
            "[system]/[user] sections, placeholders {{question}}, {{response}} and {{reference}} "
            'required, {{passages}} and {{notes}} optional; answered as {"reasoning": optional, '
            '"label": correct|partial|hallucinated|abstained}; its version (NAME@hash of its '
            "text) is in every record",
        )
    )
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    add_batch_options(p)
    p.set_defaults(handler=Handler("ragassay.cli.llm_stages", "run_check"))


def generate(sub: Any) -> None:
    p = sub.add_parser(
        "generate",
        help="write easy / medium / hard questions with answers and evidence from your chunks",
        description="Generate a question set from CHUNKS (used as given: the same ids come out). "
        "Each question carries its reference answer, its gold chunk ids, verbatim evidence "
        "and the checks it passed (BM25 rank and word overlap of the gold chunks, "
        "answerability from the gold chunks alone, and for hard questions that no single "
        "chunk suffices). Failed questions go to --rejects with the reason, never into the set.",
        epilog="Example: ragassay generate datasets/example/chunks.jsonl -o questions.jsonl --limit 20 "
        "--qrels-out questions.qrels --rejects rejects.jsonl --model gpt-4o-mini",
    )
    reads(p.add_argument("chunks", metavar="CHUNKS", help="chunks JSONL (id, text; BEIR corpus lines work too)"))
    writes(p.add_argument("-o", "--output", required=True, metavar="FILE", help="questions JSONL"))
    p.add_argument(
        "--per-chunk",
        type=positive_float,
        default=1.0,
        metavar="N",
        help="questions wanted per usable chunk when --limit is not given (default 1)",
    )
    text(
        p.add_argument(
            "--mix",
            default="easy=0.4,medium=0.4,hard=0.2",
            help="share of each kind of question (default easy=0.4,medium=0.4,hard=0.2); add "
            "unanswerable=S (on the corpus's topic, answered by no chunk: verified by a search) "
            "and false_premise=S (takes for granted what a chunk contradicts) for questions the "
            "corpus cannot answer as asked, e.g. easy=0.3,medium=0.3,hard=0.2,unanswerable=0.1,"
            "false_premise=0.1",
        )
    )
    p.add_argument(
        "--limit", type=positive_int, metavar="N", help="number of questions wanted in all (new ones, with --append)"
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="grow the set in -o: keep its questions, add new ones "
        "that duplicate none of them, drawn from chunks it does not use yet",
    )
    text(
        p.add_argument(
            "--styles",
            default="question=0.4,keywords=0.25,lowercase=0.15,task=0.2",
            help="share of each style users type: question (a full sentence), keywords, lowercase (quick, "
            "with a typo), task ('how do i ...'); default question=0.4,keywords=0.25,lowercase=0.15,task=0.2",
        )
    )
    p.add_argument("--seed", type=nonneg_int, default=0, help="seed for chunk selection and grouping (default 0)")
    writes(
        p.add_argument(
            "--qrels-out",
            metavar="FILE",
            help="TREC qrels of the gold chunks, graded by role: 3 for a chunk that states the answer, 2 for one "
            "that supports a hop (as in the records' grades)",
        )
    )
    writes(p.add_argument("--rejects", metavar="FILE", help="dropped questions and unfit chunks, with reasons"))
    folder(
        p.add_argument(
            "--export",
            nargs=2,
            action="append",
            default=[],
            metavar=("FORMAT", "DIR"),
            help="also write the set into DIR for another tool, named after what loads it: beir, "
            "llamaindex-query-response (llama-index-core's QueryResponseDataset, with relevant_docs), "
            "llamaindex-embedding-qa (llama_index.finetuning.EmbeddingQAFinetuneDataset), "
            "ragas-evaluation-dataset (ragas.EvaluationDataset), ragas-testset (ragas's Testset), "
            "deepeval-goldens (deepeval's EvaluationDataset goldens); repeat for several",
        )
    )
    p.add_argument(
        "--max-per-doc",
        type=positive_int,
        metavar="N",
        help="draw at most N candidates from one document "
        "before the others run out (default: a quarter of the set); documents are drawn in proportion "
        "to their size",
    )
    add_format_option(p, ("table", "json"))
    add_llm_options(p)
    add_batch_options(p, shard=False)  # generate is adaptive (each wave depends on the last): no shards
    p.set_defaults(handler=Handler("ragassay.cli.llm_stages", "run_generate"))


def remap(sub: Any) -> None:
    p = sub.add_parser(
        "remap",
        help="carry a question set over to re-chunked documents (new qrels)",
        description="Find each question's evidence quotes in NEW_CHUNKS (exact, then fuzzy matching) and "
        "write qrels for the new chunk ids. Questions whose evidence cannot be placed are "
        "listed, not dropped silently.",
        epilog="Example: ragassay remap questions.jsonl new_chunks.jsonl -o new.qrels",
    )
    reads(p.add_argument("questions", metavar="QUESTIONS", help="questions.jsonl from generate"))
    reads(p.add_argument("new_chunks", metavar="NEW_CHUNKS", help="the re-chunked corpus (JSONL)"))
    writes(p.add_argument("-o", "--output", required=True, metavar="QRELS", help="TREC qrels for the new chunk ids"))
    p.add_argument("--threshold", type=percent, default=90.0, help="fuzzy match score needed, 0-100 (default 90)")
    add_format_option(p, ("table", "json"))
    p.set_defaults(handler=Handler("ragassay.cli.llm_stages", "run_remap"))
