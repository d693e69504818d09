"""``tool_search`` (Pi 1.6, delta §4.3): the tokenizer, the BM25 ranking (values checked
against Pi 1.6.0's ``Bm25Ranker`` on the same corpus), the tool's texts and what it loads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pi_builtin_tools.catalog.tool_search import (
    TOOL_SEARCH_DESCRIPTION,
    Bm25Ranker,
    SearchDocument,
    create_tool_search_tool_definition,
    search_document,
    tokenize,
)
from pi_core import (
    AgentTool,
    AgentToolResult,
    ToolError,
    ToolNamespace,
    ToolSet,
    wrap_tool_definition,
)


def test_tokenize_splits_camel_case_drops_stop_words_and_singularises() -> None:
    assert tokenize("readFile the HTTPServer issues searches class, a boxes café 中文 dev-radius") == [
        "read", "file", "http", "server", "issue", "search", "class", "box", "café", "中文",
        "dev", "radiu",
    ]  # fmt: skip


CORPUS = [
    SearchDocument("read_file", "Read the contents of a file. path The file to read."),
    SearchDocument(
        "mcp__github__list_issues",
        "List issues of a repository. owner repo state",
        "mcp__github GitHub issues, pull requests and repositories",
    ),
    SearchDocument(
        "mcp__github__create_issue",
        "Create an issue. title body",
        "mcp__github GitHub issues, pull requests and repositories",
    ),
    SearchDocument("search_files", "Search for files by glob pattern. pattern"),
    SearchDocument("screenshot", "Take a screenshot of a window or the whole screen. window"),
    SearchDocument("window", "Focus a window."),
]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("github issues", [("mcp__github__create_issue", 8.315088345498426),
                           ("mcp__github__list_issues", 8.14442178069832)]),
        # more covered terms first: both words beat the tool whose name has one
        ("screenshot window", [("screenshot", 9.91912825242468), ("window", 7.013349901757512)]),
        ("read file", [("read_file", 13.58944274530003), ("search_files", 4.104155296615467)]),
        # the exact name (after its last "__") first
        ("list_issues", [("mcp__github__list_issues", 13.134156163480212),
                         ("mcp__github__create_issue", 4.711420385364372)]),
        ("create issue", [("mcp__github__create_issue", 13.56016218576799),
                          ("mcp__github__list_issues", 4.540753820564266)]),
        ("window", [("window", 5.472904860810363), ("screenshot", 1.3257259095087364)]),
        ("files", [("read_file", 4.414584161052211), ("search_files", 4.104155296615467)]),
        ("zzz", []),
        ("the of", []),
    ],
)  # fmt: skip
def test_bm25_ranking_matches_pi(query: str, expected: list[tuple[str, float]]) -> None:
    assert Bm25Ranker().rank(query, CORPUS, 8) == expected


def test_limit_cuts_the_ranking() -> None:
    assert Bm25Ranker().rank("window", CORPUS, 1) == [("window", 5.472904860810363)]


def test_search_document_reads_schema_descriptions_property_names_and_refs() -> None:
    tool = SimpleNamespace(
        name="find",
        description="Search for files by glob pattern.",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern"},
                "path": {"$ref": "#/$defs/p"},
            },
            "$defs": {"p": {"type": "string", "description": "Directory to search"}},
        },
    )
    assert search_document(tool, ToolNamespace("ns", description="Name space")) == SearchDocument(
        "find",
        "Search for files by glob pattern. pattern Glob pattern path Directory to search",
        "ns Name space ",
    )


# -- the tool ----------------------------------------------------------------------------------


def dummy(name: str, description: str, exposure: Any) -> AgentTool:
    async def execute(tool_call_id: str, params: Any, on_update: Any = None) -> AgentToolResult:
        return AgentToolResult()

    return AgentTool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": {}},
        execute=execute,
        exposure=exposure,
    )


def session_with(tool_set: ToolSet) -> SimpleNamespace:
    return SimpleNamespace(session=SimpleNamespace(tools=tool_set))


def test_definition() -> None:
    definition = create_tool_search_tool_definition()
    assert (definition.name, definition.exposure, definition.default_active) == (
        "tool_search",
        "model-only",
        False,
    )
    assert definition.description == TOOL_SEARCH_DESCRIPTION
    assert definition.parameters["properties"] == {
        "query": {"type": "string", "description": "Search query for deferred tools."},
        "limit": {
            "type": "number",
            "description": "Maximum number of tools to return. Defaults to 8.",
        },
    }


async def test_search_loads_matches_for_the_next_call() -> None:
    tools = ToolSet(
        [
            dummy("grep", "Search file contents.\nSecond line.", "deferred"),
            dummy("glob_files", "Find files by glob.", "codemode"),
            dummy("ls", "List files.", "direct"),
            dummy("secret", "Search secrets.", "hidden"),
        ]
    )
    search = wrap_tool_definition(create_tool_search_tool_definition(), session_with(tools))
    result = await search.execute("c1", {"query": "search files"})
    assert result.content[0].text == (
        "Loaded 2 tools. They are available from your next call:\n"
        "- grep: Search file contents.\n"
        "- glob_files: Find files by glob."
    )
    assert result.details == {"loaded": ["grep", "glob_files"]}
    assert tools.active_names == ["ls", "grep", "glob_files"]
    again = await search.execute("c2", {"query": "search files", "limit": 2.0})
    assert (again.content[0].text, again.details) == ("No matching tools found.", {"loaded": []})


async def test_one_tool_is_singular_and_limit_counts() -> None:
    tools = ToolSet([dummy("a_search", "Search.", "deferred"), dummy("b", "Search.", "deferred")])
    search = wrap_tool_definition(create_tool_search_tool_definition(), session_with(tools))
    result = await search.execute("c1", {"query": "search", "limit": 1})
    assert result.content[0].text == (
        "Loaded 1 tool. They are available from your next call:\n- a_search: Search."
    )


@pytest.mark.parametrize(
    ("params", "text"),
    [
        ({"query": "  "}, "query must not be empty"),
        ({"query": "x", "limit": 0}, "limit must be a positive integer"),
        ({"query": "x", "limit": 1.5}, "limit must be a positive integer"),
        ({"query": "x", "limit": -3}, "limit must be a positive integer"),
    ],
)
async def test_errors(params: dict[str, Any], text: str) -> None:
    search = wrap_tool_definition(create_tool_search_tool_definition(), None)
    with pytest.raises(ToolError) as info:
        await search.execute("c1", params)
    assert str(info.value) == text


async def test_without_a_session_nothing_is_found() -> None:
    search = wrap_tool_definition(create_tool_search_tool_definition(), None)
    result = await search.execute("c1", {"query": "files"})
    assert (result.content[0].text, result.details) == ("No matching tools found.", {"loaded": []})
